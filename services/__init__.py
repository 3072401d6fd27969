"""s2c-grpc's services.

gRPC's fork support is turned off before anything imports grpc: our processes fork only to
exec (Chromium, Tesseract, esbuild, the services themselves), and with it on, grpcio
restarts its poller thread in the forked child, where `subprocess` closes the inherited
descriptors, the poller's epoll one among them, before the exec: that thread then fails on
`epoll_wait` (EBADF) and takes the child down (grpc/grpc issues 37710 and 43055; seen once
here as an agent that "exited before listening"). An operator's own setting wins.
"""

import os

os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
