// adv: lint-only
#include "_prelude.hh"

int main()
{
  adv::note("spinning", "true");
  volatile unsigned long long counter = 0;
  for (;;)
    counter = counter + 1;
}
