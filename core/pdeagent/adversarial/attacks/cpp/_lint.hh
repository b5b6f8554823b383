// Lint-only stand-ins: what a compiler sees in place of the rendered values, so that every
// attack file compiles on its own (g++ -std=c++17 -fsyntax-only FILE.cc).
//
// Never part of a submission. The attack files include this header inside their
// "// adv: lint-only {" ... "// adv: lint-only }" blocks, which rendering removes; each
// __NAME__ placeholder is then replaced by the C++ literal of the run's value (see
// pdeagent/adversarial/render.py).
#pragma once

#define __ATTACK_NAME__ "attack"
#define __RUN_TOKEN__ "pdeagentadv0"
#define __READS__ {{"key", "/nonexistent"}}
#define __PORT__ 1
#define __ABSTRACT_SOCKET__ "socket"
#define __HOST_ADDRS__ {"192.0.2.1"}
#define __GRID_POINTS__ 4
#define __CANARY_DIR__ "/nonexistent"
#define __CANARY_FILE__ "/nonexistent/canary.txt"
#define __OUTSIDE_NEW__ {"/nonexistent/new"}
#define __OUTSIDE_EXISTING__ {"/nonexistent/existing"}
#define __INCLUDE_TARGET__ "/dev/null"
