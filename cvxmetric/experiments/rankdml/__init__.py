"""RankDML's image-retrieval protocol (Lee, Jin, Jain 2008, Sec. 4-5):
:mod:`.retrieval`."""
