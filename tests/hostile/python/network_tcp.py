# expect: runtime_error
# stdin: port
# The judge's machine runs a TCP server on 127.0.0.1:<port>; the sandbox has its own empty network.
import socket, sys
port = int(sys.stdin.read())
s = socket.create_connection(("127.0.0.1", port), timeout=2)
s.sendall(b"escaped")
