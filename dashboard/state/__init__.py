"""What the page holds: the address, the settings read from it, what a link could not carry, the role."""
