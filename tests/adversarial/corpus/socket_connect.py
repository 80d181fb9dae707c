"""Opens a TCP connection to a listener on 127.0.0.1 (started by the test)."""
EXPECT = {
    "tries": "import socket and connect to 127.0.0.1",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked import of 'socket'",
}
import socket  # <- rejected


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        connection = socket.create_connection(("127.0.0.1", @@PORT@@), timeout=1)
        connection.sendall(b"hello from a policy")
        return obs["legal_actions"][0]
