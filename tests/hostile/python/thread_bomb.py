# expect: runtime_error
# Start threads until the task limit refuses one ("can't start new thread").
import threading, time
while True:
    threading.Thread(target=time.sleep, args=(100,), daemon=True).start()
