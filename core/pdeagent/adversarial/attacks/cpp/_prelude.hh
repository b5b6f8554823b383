// pdeagent adversarial attack __ATTACK_NAME__: a hostile submission (sandbox test).
// adv: lint-only
#pragma once
#include "_lint.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace adv
{
  const std::string ATTACK = __ATTACK_NAME__;
  const std::string RUN_TOKEN = __RUN_TOKEN__;
  const std::vector<std::pair<std::string, std::string>> READS = __READS__;
  std::string findings_file = "findings.json";
  std::vector<std::pair<std::string, std::string>> findings; // key -> JSON text

  std::string quote(const std::string &s)
  {
    std::string out = "\"";
    char buf[8];
    for (const unsigned char c : s)
      {
        if (c == '"' || c == '\\')
          {
            out += '\\';
            out += static_cast<char>(c);
          }
        else if (c < 0x20 || c >= 0x7f)
          {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
          }
        else
          out += static_cast<char>(c);
      }
    return out + "\"";
  }

  std::string hex(const std::string &s)
  {
    static const char *digits = "0123456789abcdef";
    std::string out;
    for (const unsigned char c : s)
      {
        out += digits[c >> 4];
        out += digits[c & 15];
      }
    return out;
  }

  std::string error(int err)
  {
    return quote(std::string("errno ") + std::to_string(err) + ": " + std::strerror(err));
  }

  void note(const std::string &key, const std::string &json)
  {
    bool found = false;
    for (auto &kv : findings)
      if (kv.first == key)
        {
          kv.second = json;
          found = true;
        }
    if (!found)
      findings.emplace_back(key, json);
    std::string text = "{\"attack\": " + quote(ATTACK);
    for (const auto &kv : findings)
      text += ", " + quote(kv.first) + ": " + kv.second;
    text += "}";
    const std::string tmp = findings_file + ".tmp";
    if (std::FILE *f = std::fopen(tmp.c_str(), "w"))
      {
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
        std::rename(tmp.c_str(), findings_file.c_str());
      }
  }

  std::string try_read(const std::string &path)
  {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0)
      return "{\"ok\": false, \"error\": " + error(errno) + "}";
    std::string data;
    char buf[65536];
    ssize_t n;
    while (data.size() < (1u << 20) && (n = ::read(fd, buf, sizeof buf)) > 0)
      data.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    return "{\"ok\": true, \"size\": " + std::to_string(data.size()) +
           ", \"head\": " + quote(hex(data.substr(0, 64))) +
           ", \"text\": " + quote(data.substr(0, 4096)) + "}";
  }

  std::string try_create(const std::string &path)
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
      return error(errno);
    const std::string text = "pdeagent adversarial " + RUN_TOKEN;
    const ssize_t n = ::write(fd, text.data(), text.size());
    ::close(fd);
    return n >= 0 ? "\"written\"" : error(errno);
  }

  std::string outcome(int rc)
  {
    return rc == 0 ? "\"done\"" : error(errno);
  }

  std::string cwd()
  {
    char buf[4096];
    return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
  }
} // namespace adv
