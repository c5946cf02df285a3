"""The class takes part: share link and QR code, quiz, rooms, guided tours."""
