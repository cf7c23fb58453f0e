"""Pairs of submissions that must not reach each other through a reused sandbox (issue 28).

Each pair is a *stasher* (a correct program that, on the side, leaves its answers where the next
session could find them) and a *copier* (a wrong program that prints what it finds; without a
stash it prints a wrong answer). Judged one after the other on the same reused sandbox, the
stasher must get AC and the copier WA: a copier's AC means a session observed the one before it.
The same programs are judged through ``judge()`` (tests/sandbox), ``arbiter serve`` (tests/server)
and ``arbiter score --ray local`` (tests/cluster).

Also a page-cache pair (an earlier case or submission charges ~450 MB of page cache to the
sandbox's memory cgroup, then a program touching ~590 MB against 512 MiB must still be MLE), and
the program of the concurrent-exec stress (a correct C++ program with a 2 MB executable).
"""

from __future__ import annotations

import time

from arbiter.judge.task import CompileSpec, Task
from arbiter.judge.testsuite import StdioCase, TestSuite
from arbiter.sandbox.limits import MiB, Limits

#: "print 2n": several cases, so stashes of one case could serve the others too.
DOUBLING = TestSuite(tuple(StdioCase(f"n{n}", b"%d\n" % n, (b"%d\n" % (2 * n),))
                           for n in (21, 5, 1234, 77)))
#: One case (a counter holds one answer).
DOUBLING_ONE = TestSuite((StdioCase("n21", b"21\n", (b"42\n",)),))

#: Stashes each answer byte as a loopback TCP connection left in TIME_WAIT (60 s, no process
#: needed): address 127.a.b.c from a hash of stdin, port 10000 + 256 * i + byte.
TCP_STASHER = r"""
import hashlib, socket, sys
data = sys.stdin.buffer.read()
answer = b"%d\n" % (2 * int(data))
h = hashlib.sha256(data).digest()
addr = "127.%d.%d.%d" % (h[0], h[1], h[2] | 1)
sys.stdout.buffer.write(answer)
sys.stdout.flush()
try:
    for i, byte in enumerate(answer):
        port = 10000 + 256 * i + byte
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((addr, port))
        srv.listen(1)
        cli = socket.create_connection((addr, port))
        peer, _ = srv.accept()
        cli.close()  # the active close: cli's 4-tuple stays in TIME_WAIT
        peer.close()
        srv.close()
except OSError:
    pass  # no loopback: nothing to stash (the answer is out already)
"""

#: Prints the bytes stashed for its stdin in /proc/net/tcp (else a wrong answer).
TCP_COPIER = r"""
import hashlib, sys
data = sys.stdin.buffer.read()
h = hashlib.sha256(data).digest()
want = "%02X%02X%02X%02X" % (h[2] | 1, h[1], h[0], 127)
found = {}
try:
    for path in ("/proc/net/tcp",):
        for line in open(path).readlines()[1:]:
            ip, port = line.split()[2].split(":")
            if ip == want:
                i, byte = divmod(int(port, 16) - 10000, 256)
                found[i] = byte
except OSError:
    pass
sys.stdout.buffer.write(bytes(found[i] for i in sorted(found)) or b"0\n")
"""

#: Reads a counter of the network namespace: Udp OutDatagrams of /proc/net/snmp, or the packets
#: lo received (/proc/net/dev).
SNMP_COUNTER = r"""
def counter():
    rows = [l.split() for l in open("/proc/net/snmp") if l.startswith("Udp:")]
    return int(dict(zip(rows[0][1:], rows[1][1:]))["OutDatagrams"])
"""
DEV_COUNTER = r"""
def counter():
    for line in open("/proc/net/dev"):
        name, _, rest = line.partition(":")
        if name.strip() == "lo":
            return int(rest.split()[1])
"""

#: Stashes its answer (< 256) in the counter: sends UDP datagrams on loopback until the counter
#: is the answer modulo 256 (whatever it was before).
COUNTER_STASHER = r"""
import socket, sys
answer = 2 * int(sys.stdin.read())
print(answer)
sys.stdout.flush()
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    for _ in range((answer - counter()) % 256):
        s.sendto(b"x", s.getsockname())
        s.recv(1)
except OSError:
    pass
"""

#: Prints the counter modulo 256.
COUNTER_COPIER = r"""
print(counter() % 256)
"""

#: Binds an abstract unix socket named after its answer and leaves a child holding it.
ABSTRACT_STASHER = r"""
import os, socket, sys, time
answer = 2 * int(sys.stdin.read())
print(answer)
sys.stdout.flush()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(b"\0stash-%d" % answer)
s.listen(1)
if os.fork() == 0:
    os.setsid()
    time.sleep(30)
"""

#: Prints the answer found in /proc/net/unix (abstract names), else a wrong one.
ABSTRACT_COPIER = r"""
import re
found = [m.group(1) for m in re.finditer(r"@stash-(\d+)", open("/proc/net/unix").read())]
print(found[-1] if found else 0)
"""

#: Stashes its answer in the UTS namespace (hostname, domain name), if it can.
UTS_STASHER = r"""
import socket, sys
answer = 2 * int(sys.stdin.read())
print(answer)
sys.stdout.flush()
try:
    socket.sethostname("a%d" % answer)
except OSError:
    pass
try:
    open("/proc/sys/kernel/domainname", "w").write("a%d" % answer)
except OSError:
    pass
"""

UTS_COPIER = r"""
import socket
for name in (socket.gethostname(), open("/proc/sys/kernel/domainname").read().strip()):
    if name.startswith("a") and name[1:].isdigit():
        print(name[1:])
        break
else:
    print(0)
"""

#: Name -> (stasher, copier, suite).
PAIRS = {
    "tcp_time_wait": (TCP_STASHER, TCP_COPIER, DOUBLING),
    "udp_snmp_counters": (SNMP_COUNTER + COUNTER_STASHER, SNMP_COUNTER + COUNTER_COPIER, DOUBLING_ONE),
    "lo_dev_counters": (DEV_COUNTER + COUNTER_STASHER, DEV_COUNTER + COUNTER_COPIER, DOUBLING_ONE),
    "abstract_unix_socket": (ABSTRACT_STASHER, ABSTRACT_COPIER, DOUBLING_ONE),
    "hostname": (UTS_STASHER, UTS_COPIER, DOUBLING_ONE),
}
PAIR_LIMITS = Limits(cpu_seconds=4, output_bytes=1 << 20)


# ---- red team 4: what still crosses from one session to the next -----------------------------

#: The autogroup id (``/proc/self/autogroup``) is a host-wide counter that only ``setsid()`` moves
#: (the kernel's ``autogroup_seq_nr``): each session server calls it once at its arm, and a case
#: may call it as often as it likes. The stasher learns the counter (one setsid in a child), then
#: calls setsid until the next id handed out (the next session server's) is its answer modulo 256.
AUTOGROUP_STASHER = r"""
import os, sys
answer = 2 * int(sys.stdin.read())
print(answer)
sys.stdout.flush()
def setsid_child():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.write(w, open("/proc/self/autogroup").read().split()[0].rsplit("-", 1)[1].encode())
        os._exit(0)
    os.close(w)
    got = os.read(r, 64)
    os.close(r)
    os.waitpid(pid, 0)
    return int(got)
last = setsid_child()
for _ in range((answer - 1 - last) % 256):
    setsid_child()
"""

#: Prints its own autogroup id (its session server's, inherited) modulo 256.
AUTOGROUP_COPIER = r"""
print(int(open("/proc/self/autogroup").read().split()[0].rsplit("-", 1)[1]) % 256)
"""

#: The inotify rename cookie is a host-wide counter (the kernel's ``fsnotify_sync_cookie``) that
#: every rename moves, watched or not. The stasher learns it (a rename under its own watch) and
#: renames until the next cookie is its answer modulo 256; the copier renames under a watch.
INOTIFY_COOKIE = r"""
import ctypes, os, struct
def renamed_cookie():
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    libc.inotify_add_watch(fd, b"/tmp", 0x40 | 0x80)  # IN_MOVED_FROM | IN_MOVED_TO
    open("/tmp/probe", "w").close()
    os.rename("/tmp/probe", "/tmp/probed")
    return struct.unpack_from("iIII", os.read(fd, 4096))[2]
"""
INOTIFY_STASHER = INOTIFY_COOKIE + r"""
import sys
answer = 2 * int(sys.stdin.read())
print(answer)
sys.stdout.flush()
names = ("/tmp/probed", "/tmp/probe")
for i in range((answer - 1 - renamed_cookie()) % 256):  # one rename, one cookie
    os.rename(names[i % 2], names[(i + 1) % 2])
"""
INOTIFY_COPIER = INOTIFY_COOKIE + r"""
print(renamed_cookie() % 256)
"""

#: Socket cookies (``SO_COOKIE``) come from a host-wide counter handed out to each CPU in batches
#: of 4096 (batches start at 4096k + 1, so each CPU's next cookie modulo 256 is its last + 1). The
#: stasher sets each CPU's to its answer modulo 256; the copier asks for one on its CPU.
SOCKET_COOKIE = r"""
import os, socket, struct
def cookie():
    with socket.socket(socket.AF_UNIX) as s:
        return struct.unpack("Q", s.getsockopt(socket.SOL_SOCKET, 57, 8))[0]  # SO_COOKIE
"""
SOCKET_STASHER = SOCKET_COOKIE + r"""
import sys
answer = 2 * int(sys.stdin.read())
print(answer)
sys.stdout.flush()
for cpu in sorted(os.sched_getaffinity(0)):
    os.sched_setaffinity(0, {cpu})
    for _ in range((answer - 1 - cookie()) % 256):
        cookie()
"""
SOCKET_COPIER = SOCKET_COOKIE + r"""
print(cookie() % 256)
"""

#: The device nodes of ``/dev`` (``null``, ``zero``, ...) are bind mounts of the host's devtmpfs
#: nodes, mounted read-write, and mode 0666: ``utime(path)`` (set to now: write permission is
#: enough) changes the *host's* inode times, under every session and sandbox. The stasher touches
#: ``/dev/null`` until its mtime (in units of 2**22 ns, ~4 ms) is its answer modulo 256.
DEV_MTIME_STASHER = r"""
import os, sys, time
answer = 2 * int(sys.stdin.read())
print(answer)
sys.stdout.flush()
deadline = time.monotonic() + 3
while time.monotonic() < deadline:
    try:
        os.utime("/dev/null")
    except OSError:
        break
    if (os.stat("/dev/null").st_mtime_ns >> 22) % 256 == answer:
        break
    time.sleep(0.0005)
"""
DEV_MTIME_COPIER = r"""
import os
print((os.stat("/dev/null").st_mtime_ns >> 22) % 256)
"""

#: Name -> (stasher, copier, suite): red team 4's pairs through host-wide counters and the host's
#: device times (the copier got AC; their calls are denied to a session now, the devices read-only).
LEAKING_PAIRS = {
    "autogroup_id": (AUTOGROUP_STASHER, AUTOGROUP_COPIER, DOUBLING_ONE),
    "inotify_rename_cookie": (INOTIFY_STASHER, INOTIFY_COPIER, DOUBLING_ONE),
    "socket_cookie": (SOCKET_STASHER, SOCKET_COPIER, DOUBLING_ONE),
    "dev_null_mtime": (DEV_MTIME_STASHER, DEV_MTIME_COPIER, DOUBLING_ONE),
}


# ---- red team 5: host-wide state still open to a session -------------------------------------

#: pidfs (Linux 6.9+) gives every struct pid a 64-bit inode number from one host-wide counter
#: that every process or thread creation on the host moves; any pidfd's ``st_ino`` reads it.
#: Between the stasher's last fork and the copier's own birth the judge creates 3 processes on
#: a quiet host (measured: 7 of 8 times 3; the end of a session, the next one's server, its
#: forker, the case): the stasher forks until the next number is 8 times its answer modulo
#: 2048, the copier prints its own modulo 2048 divided by 8 (a slack of 7 other creations).
PIDFS_STASHER = r"""
import os, sys
answer = 2 * int(sys.stdin.read())
print(answer)
sys.stdout.flush()
def fresh():  # a new process: the host-wide pidfs inode counter's next value
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    fd = os.pidfd_open(pid)
    ino = os.fstat(fd).st_ino
    os.close(fd)
    os.waitpid(pid, 0)
    return ino
while (fresh() + 3) % 2048 != 8 * (answer % 256):  # (a copier born 3-10 processes on reads it)
    pass
"""
PIDFS_COPIER = r"""
import os
print(os.fstat(os.pidfd_open(os.getpid())).st_ino % 2048 // 8)
"""

#: The host's page cache of its read-only /usr files (one cache for every sandbox and session):
#: the stasher evicts 257 slots of a large /usr file (``POSIX_FADV_DONTNEED``, allowed on any
#: file one can read) and reads the slot of its answer twice (the active list: a session's end
#: reclaims the sandbox's page cache only down to a slack); the copier asks which slot is cached
#: with ``preadv2(RWF_NOWAIT)`` (EAGAIN when not; timing a read tells the same: ~45 us against
#: ~1.5 us).
PAGE_CACHE_FILE = r"""
import os
STRIDE, BASE = 64 * 4096, 4096 * 3
def big_file():
    for d, dirs, files in os.walk("/usr/lib"):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            if not os.path.islink(p) and os.path.isfile(p) and os.path.getsize(p) >= BASE + 257 * STRIDE:
                return p
fd = os.open(big_file(), os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # (no readahead into the next slots)
"""
PAGE_CACHE_STASHER = PAGE_CACHE_FILE + r"""
import sys
answer = 2 * int(sys.stdin.read())
print(answer)
sys.stdout.flush()
os.posix_fadvise(fd, BASE, 257 * STRIDE, os.POSIX_FADV_DONTNEED)  # every slot evicted
for _ in range(2):
    os.pread(fd, 4096, BASE + (1 + answer % 256) * STRIDE)
"""
PAGE_CACHE_COPIER = PAGE_CACHE_FILE + r"""
hits = []
for v in range(256):
    try:
        os.preadv(fd, [bytearray(4096)], BASE + (1 + v) * STRIDE, os.RWF_NOWAIT)
        hits.append(v)
    except BlockingIOError:
        pass
print(hits[0] if len(hits) == 1 else hits)
"""

#: Name -> (stasher, copier, suite): red team 5's pairs (the copier gets AC: xfails, not strict; pidfs 10/10 at load 2.4-3.6 and
#: page cache 9/10 at load 1.5, with `make test` running alongside).
OPEN_PAIRS = {
    "pidfs_inode": (PIDFS_STASHER, PIDFS_COPIER, DOUBLING_ONE),
    "page_cache": (PAGE_CACHE_STASHER, PAGE_CACHE_COPIER, DOUBLING_ONE),
}


def pair_tasks(name: str) -> tuple[Task, Task]:
    """``(stasher, copier)`` of pair ``name`` as Python tasks."""
    stasher, copier, suite = {**LEAKING_PAIRS, **OPEN_PAIRS, **PAIRS}[name]
    return (Task("python", stasher, suite, limits=PAIR_LIMITS, run_all=True),
            Task("python", copier, suite, limits=PAIR_LIMITS, run_all=True))


# ---- memory: page cache charged by an earlier run -------------------------------------------

CPP_COMPILE = CompileSpec("g++ -std=gnu++17 -O2 main.cpp -o main", 120)
MEMORY_LIMITS = Limits(cpu_seconds=10, wall_seconds=30, memory_bytes=512 * MiB)

#: On "fill": drops ~450 MB of /usr files from the page cache and reads them back (the pages are
#: charged to the sandbox's memory cgroup); on "dentries N": looks up N names that do not exist
#: under /usr (each a negative dentry charged to the cgroup: ~200 bytes of kernel memory); on
#: "hog N": touches N MB. Prints "ok".
CACHE_THEN_HOG = r"""
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <string>
static long long total = 0;
static char buf[1 << 20];
static void walk(const std::string &dir) {
    if (total > 450LL << 20) return;
    DIR *d = opendir(dir.c_str());
    if (!d) return;
    while (dirent *e = readdir(d)) {
        if (total > 450LL << 20) break;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        std::string p = dir + "/" + e->d_name;
        struct stat st;
        if (lstat(p.c_str(), &st)) continue;
        if (S_ISDIR(st.st_mode)) { walk(p); continue; }
        if (!S_ISREG(st.st_mode) || st.st_size < (64 << 10)) continue;
        int fd = open(p.c_str(), O_RDONLY);
        if (fd < 0) continue;
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0) total += n;
        close(fd);
    }
    closedir(d);
}
static int hog(long mb) {
    const long n = mb << 20;
    char *p = (char *)malloc(n);
    if (!p) return 1;
    for (long i = 0; i < n; i += 4096) p[i] = (char)i;
    long s = 0;
    for (long i = 0; i < n; i += 1 << 20) s += p[i];
    printf("ok\n");
    return s == 12345 ? 1 : 0;
}
static void dentries(long n) {
    char name[96];
    struct stat st;
    for (long i = 0; i < n; i++) {
        snprintf(name, sizeof name, "/usr/arbiter-no-such-name-%ld-xxxxxxxxxxxxxxxx", i);
        stat(name, &st);
    }
}
int main() {
    char what[16] = "";
    long n = 0;
    if (scanf("%15s %ld", what, &n) < 1) return 1;
    if (!strcmp(what, "hog")) return hog(n);
    if (!strcmp(what, "dentries")) dentries(n);
    else {
        walk("/usr/lib");
        walk("/usr/share");
    }
    printf("ok\n");
    return 0;
}
"""

FILL = StdioCase("fill", b"fill\n", (b"ok\n",))
DENTRIES = StdioCase("dentries", b"dentries 1000000\n", (b"ok\n",))
HOG = StdioCase("hog", b"hog 590\n", (b"ok\n",))  # over 512 MiB: MLE
NEAR = StdioCase("near", b"hog 470\n", (b"ok\n",))  # under it: AC


def memory_task(*cases: StdioCase) -> Task:
    """The page-cache program on ``cases`` (:data:`FILL`, :data:`DENTRIES`, :data:`HOG`,
    :data:`NEAR`), every case run."""
    return Task("cpp", CACHE_THEN_HOG, TestSuite(cases), limits=MEMORY_LIMITS, compile=CPP_COMPILE,
                run_all=True)


#: Python forms for ``arbiter score`` (Python responses only): both print 2n. The filler first
#: drops ~300 MB of /usr files from the page cache and reads them back; the hog touches 590 MB
#: (over a 512 MiB limit: MLE, score 0, whatever ran before it). The filler's own page cache is
#: charged to its run (as isolate's cgroup counts it): it stops at 300 MB, mid-file, so that it
#: stays well under the limit itself (it read ~380 MB, stopping only between files, and measured
#: 436 MB here: a large last file took it over 512 MiB in a CI run, MLE).
PY_CACHE_FILLER = r"""
import os


def fill(cap):
    total = 0
    for top in ("/usr/lib", "/usr/share"):
        for dirpath, dirnames, filenames in os.walk(top):
            for name in filenames:
                try:
                    fd = os.open(os.path.join(dirpath, name), os.O_RDONLY | os.O_NOFOLLOW)
                except OSError:
                    continue
                try:
                    if os.fstat(fd).st_size >= 64 << 10:
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                        while True:
                            chunk = os.read(fd, 1 << 20)
                            if not chunk:
                                break
                            total += len(chunk)
                            if total > cap:
                                return
                finally:
                    os.close(fd)


n = int(input())
print(2 * n, flush=True)
fill(300 << 20)
"""

PY_HOG = r"""
n = int(input())
block = b"x" * (590 << 20)
print(2 * n + block.count(b"y"))
"""


# ---- concurrent exec ----------------------------------------------------------------------------

#: A correct "print 2n" whose executable is ~2 MB (an initialised array): writing it takes long
#: enough for a process started meanwhile to inherit a writable descriptor of it.
BIG_BINARY = r"""
#include <cstdio>
static volatile char pad[2 << 20] = {1};
int main() {
    long long n;
    if (scanf("%lld", &n) != 1) return 1;
    printf("%lld\n", 2 * n + pad[12345]);
    return 0;
}
"""


def big_binary_task(n: int = 21) -> Task:
    suite = TestSuite((StdioCase(f"n{n}", b"%d\n" % n, (b"%d\n" % (2 * n),)),))
    return Task("cpp", BIG_BINARY, suite, limits=Limits(cpu_seconds=2), compile=CPP_COMPILE)


def wait_idle(pool) -> None:
    """Wait until ``pool`` (a one-sandbox pool) has its sandbox back, recycled, idle."""
    deadline = time.monotonic() + 120
    while pool.stats()["idle"] < 1:
        assert time.monotonic() < deadline, pool.stats()
        time.sleep(0.01)
