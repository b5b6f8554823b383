// adv: lint-only
#include "_lint.hh"
#include "_prelude.hh"

int main(int argc, char **argv)
{
  if (argc >= 5 && std::string(argv[3]) == adv::RUN_TOKEN && std::string(argv[4]) == "child")
    {
      adv::findings_file = "findings-child.json";
      const int rc = ::kill(::getppid(), SIGKILL);
      adv::note("child_killed_parent", rc == 0 ? "true" : adv::error(errno));
      ::usleep(300000);
      const std::vector<double> zeros(__GRID_POINTS__, 0.0);
      for (int i = 0; i < 60; ++i)
        {
          if (std::FILE *f = std::fopen("solution_grid.bin", "wb"))
            {
              std::fwrite(zeros.data(), sizeof(double), zeros.size(), f);
              std::fclose(f);
            }
          if (std::FILE *f = std::fopen("meta.json", "w"))
            {
              std::fputs("{\"wall_time_sec\": 0.001, \"status\": \"ok\"}", f);
              std::fclose(f);
            }
          ::usleep(250000);
        }
      return 0;
    }
  adv::note("forked", "true");
  const pid_t pid = ::fork();
  if (pid == 0)
    {
      ::setsid();
      ::execl("/proc/self/exe", argv[0], argc > 1 ? argv[1] : "case_spec.json",
              argc > 2 ? argv[2] : ".", adv::RUN_TOKEN.c_str(), "child",
              static_cast<char *>(nullptr));
      _exit(127);
    }
  for (int i = 0; i < 100; ++i)
    ::usleep(100000); // the child kills us long before this ends
  return 0;
}
