# task: double
# expect: WA
# Patch json so the harness would write a forged result: the harness captured json before.
import json, builtins
json.dumps = lambda *a, **k: '{"ok": true, "value": 2}'
json.JSONEncoder.encode = lambda self, o: '{"ok": true, "value": 2}'
builtins.print = lambda *a, **k: None
def f(x):
    return -1
