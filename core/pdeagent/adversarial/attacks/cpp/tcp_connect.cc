// adv: lint-only
#include "_lint.hh"
#include "_prelude.hh"

static std::string connect_inet(const char *host, int port)
{
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0)
    return adv::error(errno);
  timeval tv{2, 0};
  ::setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<unsigned short>(port));
  ::inet_pton(AF_INET, host, &addr.sin_addr);
  const int rc = ::connect(s, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
  const int err = errno;
  ::close(s);
  return rc == 0 ? "\"connected\"" : adv::error(err);
}

static std::string connect_abstract(const std::string &name)
{
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (s < 0)
    return adv::error(errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  const int rc = ::connect(s, reinterpret_cast<sockaddr *>(&addr), len);
  const int err = errno;
  ::close(s);
  return rc == 0 ? "\"connected\"" : adv::error(err);
}

int main()
{
  const int port = __PORT__;
  std::vector<std::pair<std::string, int>> targets = {{"127.0.0.1", port}, {"1.1.1.1", 53}};
  for (const std::string &host : std::vector<std::string>__HOST_ADDRS__)
    targets.emplace_back(host, port);
  std::string results = "{";
  for (const auto &t : targets)
    results += (results.size() > 1 ? ", " : "") +
               adv::quote(t.first + ":" + std::to_string(t.second)) + ": " +
               connect_inet(t.first.c_str(), t.second);
  results += ", \"abstract unix socket\": " + connect_abstract(__ABSTRACT_SOCKET__) + "}";
  adv::note("connects", results);
  std::printf("PDEAGENT-ADV %s\n", results.c_str());
  return 0;
}
