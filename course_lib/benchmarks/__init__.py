"""The ``course bench`` commands: each module measures one thing and prints its table."""
