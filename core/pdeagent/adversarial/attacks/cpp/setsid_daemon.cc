// adv: lint-only
#include "_lint.hh"
#include "_prelude.hh"

int main(int argc, char **argv)
{
  if (argc >= 6 && std::string(argv[3]) == adv::RUN_TOKEN && std::string(argv[4]) == "daemon")
    {
      const std::string workdir = argv[5];
      if (std::FILE *f = std::fopen((workdir + "/daemon.pid").c_str(), "w"))
        {
          std::fprintf(f, "%d", static_cast<int>(::getpid()));
          std::fclose(f);
        }
      if (::chdir("/") != 0)
        return 1;
      const std::vector<std::string> targets = {
        __CANARY_DIR__ + std::string("/daemon-") + adv::RUN_TOKEN,
        "/var/tmp/pdeagent-adv-" + adv::RUN_TOKEN + "-daemon"};
      for (int i = 0; i < 240; ++i)
        {
          ::usleep(250000);
          std::vector<std::string> paths = targets;
          paths.push_back(workdir + "/daemon-" + std::to_string(i) + ".txt");
          for (const auto &path : paths)
            if (std::FILE *f = std::fopen(path.c_str(), "w"))
              {
                std::fputs("still alive", f);
                std::fclose(f);
              }
        }
      return 0;
    }
  const std::string workdir = adv::cwd();
  const pid_t pid = ::fork();
  if (pid == 0)
    {
      ::setsid();
      if (::fork() == 0)
        ::execl("/proc/self/exe", argv[0], argc > 1 ? argv[1] : "case_spec.json",
                argc > 2 ? argv[2] : ".", adv::RUN_TOKEN.c_str(), "daemon", workdir.c_str(),
                static_cast<char *>(nullptr));
      _exit(0);
    }
  ::waitpid(pid, nullptr, 0);
  bool started = false;
  for (int i = 0; i < 250 && !started; ++i)
    {
      started = ::access("daemon.pid", F_OK) == 0;
      if (!started)
        ::usleep(20000);
    }
  adv::note("daemon_started", started ? "true" : "false");
  return 0;
}
