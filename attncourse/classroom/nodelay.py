"""The kernel's messages reach the browser as soon as they are written.

A widget update is a burst of small messages from the kernel: "busy", the slider's echo, the
caption, the image, "idle". Jupyter's server relays them over a WebSocket with the operating
system's default for a TCP socket, Nagle's algorithm: a small write waits until the one before it
is acknowledged, and a browser acknowledges late on purpose (delayed ACK: up to 40 ms on Linux,
200 ms on Windows). Measured on 2 cores, chapter 01's widget in JupyterLab, 20 key presses: on
most presses the messages after "busy" arrived together about 40 ms late, and the image followed
the key press in a median of 60-70 ms; with Nagle's algorithm off on this socket, 33-49 ms.

``attncourse start`` (``lab/course/jupyter_server_config.json``), the class's servers on
JupyterHub (``deploy/jupyter/ROLE``) and ``attncourse present`` (``slides/voila.json``) use this
connection class: Jupyter's own, with that one option of the socket changed.
"""

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection


class NoDelayKernelConnection(ZMQChannelsWebsocketConnection):
    """Jupyter's kernel WebSocket connection with Nagle's algorithm off (TCP_NODELAY)."""

    def connect(self):
        self.websocket_handler.set_nodelay(True)
        return super().connect()
