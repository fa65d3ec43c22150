"""The LDML paper's evaluation (Guillaumin, Verbeek, Schmid 2010, Sec. 4):
verification mAP and naming curves, :mod:`.evaluation`."""
