# task: count_up
# expect: WA
import sys, os, builtins
sys.exit = lambda *a: None
os._exit = lambda *a: None
builtins.exit = builtins.quit = lambda *a: None
print(42)
