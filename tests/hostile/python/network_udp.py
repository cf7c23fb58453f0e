# expect: runtime_error
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"escaped", ("8.8.8.8", 53))
