// Package scoring is the one way to use a trained forestd model: Load (a
// file) or Decode (bytes) any model — rf, sporf, morf, lfs, fdm with its
// feature mapping and derived inputs, multi-output regression, drf — and
// Score Arrow records into prediction records.
//
// A Model reads its own source columns by name from the input (a model
// trained behind an FDM mapping reads the mapping's inputs and applies the
// mapping itself, forest.Forest.FromSource), scores them with the compiled
// forest (a distance random forest through its manifold.Predictor), and
// returns one prediction record per input record, following
// schemas.Predictions (one class or value per row, with the class
// probabilities Options.Probs chooses: one column per class, the top k
// classes, or none — by default one per class up to MaxAllProbs classes
// and the top DefaultTopK beyond) or, for a model with several outputs,
// schemas.MultiPredictions (one float64 column per target). Every
// prediction row carries the model's ID and version and its source
// coordinates: Options.Source (a file path, "topic/partition/offset") and
// the row number within it. Options.Keep copies input columns (an id) into
// the predictions.
//
// The command line (forestd score, eval, lake scoring), the daemon's score
// stage and the Redpanda Connect processors all score through Model.Score
// and Model.Evaluate; nothing else in forestd turns records into
// predictions. A Model is immutable and safe for concurrent use; the
// daemon's hot swap (operators.Current) holds one, but scoring needs no
// holder.
//
// Input that does not fit the model — a missing feature column, a column of
// a type the model cannot read, a kept column that is absent or clashes
// with an output column — is an error wrapping ErrInput: retrying cannot
// help, and a streaming caller quarantines the message. Any other error is
// the caller's or forestd's fault, not the data's.
//
// Memory: prediction records are allocated with Options.Mem (default
// memory.DefaultAllocator) and released by the caller; nothing else
// outlives a call. Within a call a classifier holds only the
// probabilities its records write: every class's (rows × classes
// float32) for ProbsAll; for top<k> each row's k ranked classes, chosen
// block by block as the compiled forest finishes its blocks of rows
// (forest.Compiled.PredictBlocks, ranked by schemas.TopRanks, the records
// the same bytes as from the whole matrix), and for ProbsNone (and
// Evaluate) the class alone, so that a model of 10,000 classes scores a
// large batch into top5 without the rows × 10,000 matrix. The forest's
// blocks (each thread's sums per class) stay whatever the rows.
// Model.PredictionBytes states both parts.
package scoring
