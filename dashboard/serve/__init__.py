"""The server under the page: Streamlit's internals in one module, the compressed static files, who is asking,
what bounds the work in flight."""
