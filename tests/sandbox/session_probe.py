"""The probe and the noisy program of tests/sandbox/test_session_state.py, as source text."""

PROBE = r'''
"""Prints (JSON) everything a program can observe of its session that is not the host's own
(docs/sandbox.md, "What a session starts with"): processes, files, mounts, network, IPC, UTS,
cgroup, credentials, limits, scheduling, environment, keys, timers. (Namespace ids are not
compared: the kernel reuses the number of a namespace that is gone.)"""
import json, os, re, stat

def read(path, limit=1 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError as exc:
        return "<%s>" % type(exc).__name__

def tree(top):
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out.append("%s %o %d %d %d" % (p, st.st_mode, st.st_size if not stat.S_ISDIR(st.st_mode) else -1, st.st_ino, st.st_nlink))
    return out

def proc_tree(top):
    h = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in sorted(filenames):
            h[os.path.join(dirpath, name)] = read(os.path.join(dirpath, name), 65536)
    return h

state = {}
state["pid"] = [os.getpid(), os.getppid()]
state["procs"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
for d in ("/work", "/tmp", "/dev/shm", "/prog", "/dev"):
    state["files " + d] = tree(d)
state["root"] = sorted(os.listdir("/"))
state["mountinfo"] = [" ".join(l.split()[3:]) for l in read("/proc/self/mountinfo").splitlines()]
HOST_WIDE = ("softnet_stat",)  # per CPU of the host, whatever the namespace
for name in sorted(os.listdir("/proc/net")):
    if name in HOST_WIDE:
        continue
    text = read("/proc/net/" + name)
    if name in ("netlink", "unix", "packet"):  # socket addresses and inode numbers: counters of the host
        rows = [l.split() for l in text.splitlines()]
        inode = 6 if name == "unix" else -1
        text = "\n".join(" ".join(r[1:inode] + (r[inode + 1:] if inode > 0 else [])) for r in rows)
    if name == "sockstat":  # TCP orphan, alloc and mem, UDP mem: sockets and pages of the whole host
        text = re.sub(r" (orphan|alloc|mem) \d+", "", text)
    state["net " + name] = text
state["sys net"] = proc_tree("/proc/sys/net")
for name in ("shm", "sem", "msg"):
    state["sysvipc " + name] = read("/proc/sysvipc/" + name)
for name in ("hostname", "domainname", "shmmax", "shmall", "shmmni", "msgmax", "msgmnb", "msgmni", "sem",
             "ns_last_pid", "pid_max", "threads-max"):
    state["kernel " + name] = read("/proc/sys/kernel/" + name)
state["mqueue"] = proc_tree("/proc/sys/fs/mqueue")
state["uname"] = list(os.uname())
state["cgroup"] = read("/proc/self/cgroup")
status = dict(l.split(":", 1) for l in read("/proc/self/status").splitlines() if ":" in l)
for k in ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp",
          "Seccomp_filters", "NSpid", "NStgid", "NSpgid", "NSsid", "Cpus_allowed_list", "SigBlk", "SigIgn", "SigCgt"):
    state["status " + k] = status.get(k, "").strip()
state["limits"] = read("/proc/self/limits")
state["sched"] = [os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)), os.sched_getscheduler(0)]
state["oom"] = read("/proc/self/oom_score_adj")
state["autogroup nice"] = read("/proc/self/autogroup").split()[-1:]
state["env"] = dict(os.environ)
state["cwd"] = os.getcwd()
um = os.umask(0); os.umask(um); state["umask"] = um
state["keys"] = read("/proc/keys")
state["key-users"] = read("/proc/key-users")
state["timers"] = read("/proc/self/timers")
state["fds"] = sorted(os.listdir("/proc/self/fd"))
state["ns"] = sorted(os.listdir("/proc/self/ns"))
state["inotify"] = proc_tree("/proc/sys/fs/inotify")
print(json.dumps(state, sort_keys=True))
'''

NOISY = r'''
"""Leaves what it can in its session: files, TIME_WAIT sockets, UDP traffic, an abstract socket,
a daemon, changed scheduling, an interval timer, inotify watches, negative dentries."""
import os, socket, time, ctypes, resource, signal
for d in ("/work", "/tmp", "/dev/shm"):
    open(d + "/left", "w").write("x" * 5000)
    os.makedirs(d + "/dir/sub", exist_ok=True)
try:  # (no socket but a Unix one can be made: each attempt is refused)
    for port in range(3):
        srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 20000 + port)); srv.listen(1)
        c = socket.create_connection(("127.0.0.1", 20000 + port)); p, _ = srv.accept(); c.close(); p.close(); srv.close()
except OSError: pass
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
    for _ in range(50): u.sendto(b"x", u.getsockname()); u.recv(1)
except OSError: pass
try:
    u6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    u6.bind(("::1", 0)); u6.sendto(b"x", u6.getsockname())
except OSError: pass
a = socket.socket(socket.AF_UNIX); a.bind(b"\0noisy"); a.listen()
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget(0, 4096, 0o1000 | 0o600)
try: socket.sethostname("noisy")
except OSError: pass
try: os.setpriority(os.PRIO_PROCESS, 1, 10)
except OSError: pass
try: resource.prlimit(1, resource.RLIMIT_NOFILE, (10, 10))
except OSError: pass
os.nice(5)
try: open("/proc/self/autogroup", "w").write("10")
except OSError: pass
import select
try:
    fd = libc.inotify_init1(0); libc.inotify_add_watch(fd, b"/work", 0xfff)
except Exception: pass
signal.setitimer(signal.ITIMER_REAL, 100)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(60)
    os._exit(0)
for i in range(20000):
    try: os.stat("/usr/noisy-%d" % i)
    except OSError: pass
print("noisy")
'''
