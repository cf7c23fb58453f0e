# expect: runtime_error
# signal: SIGSEGV
import ctypes
ctypes.string_at(0)
