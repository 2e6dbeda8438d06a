"""A tenant out of one database and into another: a JSON-lines export with full fidelity
(``export``, ``importer``, the file in ``fileformat``) and a Markdown vault for reading
(``vault``). The graph goes through its backend; ``app.services.graph.transfer`` moves a
graph between backends inside one database."""
