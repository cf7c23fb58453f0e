# expect: runtime_error
import socket
socket.getaddrinfo("example.com", 80)
