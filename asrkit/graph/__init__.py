"""The language side of the decoding graph: lang directories (phones, words, L.fst), G.fst and HCLG.fst.

    from asrkit.graph.prepare_lang import prepare_lang
    from asrkit.graph.hclg import make_graph
"""
