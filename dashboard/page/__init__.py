"""What every view shares, and the page around the views: downloads, probes, presenter mode, welcome."""
