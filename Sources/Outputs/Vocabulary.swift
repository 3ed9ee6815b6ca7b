// The outputs speak the vocabulary (the snapshot, the reading table, the kinds): whoever
// imports Outputs has it too.
@_exported import Vocabulary
