"""Reports of stored runs: one self-contained HTML page (interactive charts, tables, how it was
measured) and every chart as a PNG or SVG file (`output`). The charts come from one spec each
(`charts`), drawn by Vega in the page and by vl-convert for the files; the summary's sentences
(`summary`) and the tables (`tables`) serve the page, the console and the exports alike.

A report reads the store and nothing else: it never re-runs a measurement.
"""
