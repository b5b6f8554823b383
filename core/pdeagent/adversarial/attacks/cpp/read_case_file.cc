// adv: lint-only
#include "_prelude.hh"

int main()
{
  std::string reads = "{";
  for (const auto &kv : adv::READS)
    reads += (reads.size() > 1 ? ", " : "") + adv::quote(kv.first) + ": " +
             adv::try_read(kv.second);
  reads += "}";
  adv::note("reads", reads);
  std::printf("PDEAGENT-ADV read %zu targets\n", adv::READS.size());
  return 0;
}
