"""Sphinx extension: no Binder address the book does not own.

Jupyter Book always loads sphinx-thebe, which appends to every page a hidden
``text/x-thebe-config`` script naming its own example repository on Binder
(binder-examples/jupyter-stacks-datascience) when no repository is configured.
The book has no public repository yet and its launch buttons are off, so this
extension removes that script (and its kernel-name companion) after sphinx-thebe
has added them. Once ``_config.yml`` sets ``launch_buttons.binderhub_url``, the
script names the book's own repository and is kept.
"""

from __future__ import annotations

from docutils import nodes

DEFAULT_REPOSITORY = "binder-examples/jupyter-stacks-datascience"


def _strip(app, doctree: nodes.document, docname: str) -> None:
    raws = [n for n in doctree.findall(nodes.raw) if "text/x-thebe-config" in n.astext()]
    if not raws or DEFAULT_REPOSITORY not in raws[0].astext():
        return
    for node in raws:
        following = node.next_node(nodes.raw, descend=False, siblings=True)
        if following is not None and "kernelName" in following.astext():
            following.parent.remove(following)
        node.parent.remove(node)


def setup(app):
    app.connect("doctree-resolved", _strip, priority=900)  # after sphinx-thebe's handler (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
