"""Attention Lab: entry file (placeholder until the dashboard lands)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `core` lives at the repository root

import streamlit as st

st.title("Attention Lab")
st.write("The dashboard is under construction.")
