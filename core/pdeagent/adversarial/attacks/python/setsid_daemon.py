# adv: lint-only
from _lint import __CANARY_DIR__
from _prelude import _note, _spawn_daemon, os, time

DAEMON = """
import os, sys, time
token, workdir, canary = sys.argv[1:4]
with open(os.path.join(workdir, "daemon.pid"), "w") as fh:
    fh.write(str(os.getpid()))
os.chdir("/")
for i in range(240):
    time.sleep(0.25)
    for path in (os.path.join(workdir, "daemon-%d.txt" % i),
                 os.path.join(canary, "daemon-" + token),
                 "/var/tmp/pdeagent-adv-" + token + "-daemon"):
        try:
            with open(path, "w") as fh:
                fh.write("still alive")
        except OSError:
            pass
"""


def solve(case_spec):
    _spawn_daemon(DAEMON, os.getcwd(), __CANARY_DIR__)
    for _ in range(250):
        if os.path.exists("daemon.pid"):
            break
        time.sleep(0.02)
    _note("daemon_started", os.path.exists("daemon.pid"))
