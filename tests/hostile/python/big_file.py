# expect: runtime_error
# limits: output=1MiB
# Python ignores SIGXFSZ, so the file size limit shows as an OSError (EFBIG): a runtime error.
with open("/work/big", "wb") as f:
    f.write(b"x" * (4 << 20))
