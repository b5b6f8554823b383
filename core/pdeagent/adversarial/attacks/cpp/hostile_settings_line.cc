// pdeagent-settings: {"../../../../var/tmp/pdeagent-settings-escape": 1, "/etc/passwd": 2, "huge": 1e308, "neg": -0.0, "nested": {"a": [1, 2, 3]}, "text": "`touch /var/tmp/pdeagent-settings-escape`; rm -rf /"}
// adv: lint-only
#include "_prelude.hh"

#include <fstream>
#include <sstream>

int main()
{
  // the compile stage writes the settings line beside the binary under a fixed name:
  // read it back (it must hold exactly the JSON of line 1) and write no solution
  std::ifstream in("pdeagent_settings.json");
  std::stringstream text;
  text << in.rdbuf();
  adv::note("settings_found", in ? "true" : "false");
  adv::note("settings_text", adv::quote(text.str()));
  return 0;
}
