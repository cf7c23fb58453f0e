# expect: ok
# stdout-hex: 000102fffe80c3
import sys
sys.stdout.buffer.write(bytes([0, 1, 2, 255, 254, 128, 195]))
