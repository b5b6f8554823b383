# adv: lint-only
from _lint import __ABSTRACT_SOCKET__, __HOST_ADDRS__, __PORT__
from _prelude import FINDINGS, _error, _json, _note, socket


def solve(case_spec):
    results = {}
    targets = [("127.0.0.1", __PORT__), ("localhost", __PORT__), ("1.1.1.1", 53), ("8.8.8.8", 443)]
    targets += [(address, __PORT__) for address in __HOST_ADDRS__]
    for host, port in targets:
        try:
            socket.create_connection((host, port), timeout=2).close()
            results[f"{host}:{port}"] = "connected"
        except Exception as exc:
            results[f"{host}:{port}"] = _error(exc)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect("\0" + __ABSTRACT_SOCKET__)
        results["abstract unix socket"] = "connected"
    except Exception as exc:
        results["abstract unix socket"] = _error(exc)
    finally:
        sock.close()
    try:
        socket.getaddrinfo("example.com", 80)
        results["dns example.com"] = "resolved"
    except Exception as exc:
        results["dns example.com"] = _error(exc)
    _note("connects", results)
    print("PDEAGENT-ADV", _json.dumps(FINDINGS))
