// adv: lint-only
#include "_lint.hh"
#include "_prelude.hh"

int main()
{
  std::string results = "{";
  auto add = [&results](const std::string &key, const std::string &value) {
    results += (results.size() > 1 ? ", " : "") + adv::quote(key) + ": " + value;
  };
  for (const std::string &path : std::vector<std::string>__OUTSIDE_NEW__)
    add(path, adv::try_create(path));
  for (const std::string &path : std::vector<std::string>__OUTSIDE_EXISTING__)
    {
      const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND);
      add(path, fd >= 0 ? "\"opened for writing\"" : adv::error(errno));
      if (fd >= 0)
        ::close(fd);
    }
  const std::string canary_dir = __CANARY_DIR__, canary_file = __CANARY_FILE__;
  {
    const int fd = ::open(canary_file.c_str(), O_WRONLY | O_APPEND);
    add("canary append", fd >= 0 && ::write(fd, "x", 1) == 1 ? "\"done\"" : adv::error(errno));
    if (fd >= 0)
      ::close(fd);
  }
  const timespec times[2] = {{0, 0}, {0, 0}};
  add("canary utime", adv::outcome(::utimensat(AT_FDCWD, canary_file.c_str(), times, 0)));
  add("canary chmod", adv::outcome(::chmod(canary_dir.c_str(), 0700)));
  add("canary mkdir", adv::outcome(::mkdir((canary_dir + "/d-" + adv::RUN_TOKEN).c_str(), 0755)));
  add("canary symlink",
      adv::outcome(::symlink("/etc/passwd", (canary_dir + "/l-" + adv::RUN_TOKEN).c_str())));
  const std::string moved = canary_file + ".moved";
  add("canary rename", adv::outcome(std::rename(canary_file.c_str(), moved.c_str())));
  add("canary unlink", adv::outcome(::unlink(canary_file.c_str())));
  results += "}";
  adv::note("writes", results);
  std::printf("PDEAGENT-ADV %s\n", results.c_str());
  return 0;
}
