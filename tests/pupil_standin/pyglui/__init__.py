"""A stand-in of pyglui (pupil-labs/pyglui, src/pyglui/ui_elements.pxi and cygl/utils.pyx) as a
plugin's menu uses it: the elements' constructors with pyglui's signatures, each element reading
its attribute when drawn (``value``) and writing it when the user edits it (``set``); no drawing."""
