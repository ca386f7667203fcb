"""The chapters' own code: one module (or package, for a longer chapter) per numbered notebook,
named after it: ``chNN_<name>`` holds notebook ``NN_<name>``'s experiments, data and widgets.

Chapter code builds on the mechanisms at the package's top level; the mechanisms never import it.
"""
