/* models: see models.h */
