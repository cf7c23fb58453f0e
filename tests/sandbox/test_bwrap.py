"""The bwrap argv builder (pure: arguments in, argv out)."""

from __future__ import annotations

from arbiter.sandbox import bwrap


def _plan(**changes) -> bwrap.BwrapPlan:
    base = dict(bwrap="/usr/bin/bwrap", python="/usr/bin/python3", root_layout=["--ro-bind", "/usr", "/usr"],
                ro_binds=["/opt/py"], scratch_bytes=1234, prog_dir="/tmp/h/prog", guest_dir="/src/guest",
                mounts=[("/host/pch", "/pch")], seccomp_fd=9, fd_floor=1024, info_fd=8, in_fd=3, out_fd=6,
                site=["/usr/lib/python3/dist-packages"])
    base.update(changes)
    return bwrap.BwrapPlan(**base)


def _pairs(argv: list[str], flag: str, n: int = 2) -> list[tuple[str, ...]]:
    return [tuple(argv[i + 1:i + 1 + n]) for i, a in enumerate(argv) if a == flag]


def test_namespaces_and_privileges_come_first():
    argv = bwrap.bwrap_argv(_plan())
    assert argv[0] == "/usr/bin/bwrap"
    assert argv[1:11] == ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                          "--new-session", "--as-pid-1", "--cap-drop", "ALL", "--hostname", "sandbox"]
    assert "--share-net" not in argv
    # the zygote keeps three capabilities in the sandbox's own user namespace (sessions drop them)
    assert argv[11:15] == ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"]
    plain = bwrap.bwrap_argv(_plan(zygote=False))
    assert "--cap-add" not in plain and "--zygote" not in plain


def test_binds_are_read_only_and_where_the_program_expects_them():
    argv = bwrap.bwrap_argv(_plan())
    binds = _pairs(argv, "--ro-bind")
    assert ("/usr", "/usr") in binds and ("/opt/py", "/opt/py") in binds
    assert ("/tmp/h/prog", "/prog") in binds
    assert ("/src/guest", "/arbiter/guest") in binds
    assert ("/host/pch", "/pch") in binds
    assert "--bind" not in argv  # nothing of the host is writable
    assert argv[argv.index("--remount-ro") + 1] == "/"


def test_scratch_dirs_are_size_capped_tmpfs_with_their_modes():
    argv = bwrap.bwrap_argv(_plan(scratch_bytes=777))
    tmpfs = [(argv[i - 3], argv[i - 1], argv[i + 1]) for i, a in enumerate(argv) if a == "--tmpfs"]
    assert tmpfs == [("1777", "777", "/tmp"), ("1777", "777", "/dev/shm"), ("0755", "777", "/work")]
    assert bwrap.SCRATCH_DIRS == ("/tmp", "/dev/shm", "/work")


def test_seccomp_info_fd_and_the_server_command_line():
    argv = bwrap.bwrap_argv(_plan())
    assert _pairs(argv, "--seccomp", 1) == [("9",)]
    assert _pairs(argv, "--info-fd", 1) == [("8",)]
    assert _pairs(argv, "--chdir", 1) == [("/work",)]
    tail = argv[argv.index("/usr/bin/python3"):]
    assert tail == ["/usr/bin/python3", "-I", "-S", "-B", "-X", "utf8", "-X", "cpu_count=2", "/arbiter/guest/__main__.py",
                    "3", "6", "--zygote", "1", "--filtered", "1024", "--site", "/usr/lib/python3/dist-packages"]
    # the mounts come before the options that close the layout
    assert argv.index("/pch") < argv.index("--seccomp") < argv.index("--remount-ro")


def test_no_seccomp_flag_without_a_filter():
    argv = bwrap.bwrap_argv(_plan(seccomp_fd=-1))
    assert "--seccomp" not in argv and "--filtered" not in argv  # (the server then checks itself)


def test_unisolated_command_line():
    argv = bwrap.unisolated_argv("/usr/bin/python3", "/src/guest/__main__.py", 3, 6, ("/h/work", "/h/tmp"), ())
    assert argv == ["/usr/bin/python3", "-I", "-S", "-B", "-X", "utf8", "-X", "cpu_count=2", "/src/guest/__main__.py", "3", "6",
                    "--scratch", "/h/work:/h/tmp", "--site", ""]


def test_root_layout_binds_usr_and_mirrors_the_top_level_dirs():
    args = bwrap.root_layout_args()
    assert args[:3] == ["--ro-bind", "/usr", "/usr"]
    for etc in bwrap.ETC_FILES:
        assert ("--ro-bind-try", etc, etc) in [tuple(args[i:i + 3]) for i in range(len(args) - 2)]
