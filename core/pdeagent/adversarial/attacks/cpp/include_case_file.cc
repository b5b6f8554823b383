// adv: lint-only
#include "_lint.hh"

#include __INCLUDE_TARGET__

int main()
{
  return 0;
}
