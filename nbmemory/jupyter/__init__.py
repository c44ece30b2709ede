"""The Jupyter front ends: magics, the widget, rendering, and the server extension.

Everything that imports IPython, anywidget, tornado or jupyter_server lives here, so that
``import nbmemory`` needs none of them.
"""
