ITML = ITML_Supervised = None
