"""The Jupyter front ends: magics, the widget, rendering, the server extension, and the
persona for Jupyter AI's chat.

Everything that imports IPython, anywidget, tornado, jupyter_server or Jupyter AI lives here, so
that ``import nbmemory`` needs none of them.
"""
