"""Glow's command lines on ember: the `model-compiler` and `image-classifier` console scripts.

Users coming from Glow (and NXP eIQ's Glow) keep their Makefiles: the single-dash flags of Glow's
tools are parsed as Glow parses them (flags.py), mapped onto ember's compile options, target table
and profile format (options.py, targets.py, profile.py), and run through ember.api / ember.runtime
(compiler.py, classifier.py). A flag that changes nothing in ember is accepted with a one-line note;
one whose effect ember cannot give is refused with a one-line error.
"""
