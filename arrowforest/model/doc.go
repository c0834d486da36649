// Package model encodes forests as versioned, self-describing, checksummed
// model files, and decodes them with checks that reject truncated,
// corrupted, foreign and future-version input with one clear error.
//
// This comment is the specification of the format.
//
// # Container
//
// A model is one Arrow IPC stream (the streaming format, not the file
// format; conventional extension .arrows): a Schema message, one or more
// RecordBatch messages, and the end-of-stream marker 0xFFFFFFFF 0x00000000.
// Any Arrow implementation can read it (pyarrow.ipc.open_stream, DuckDB,
// arrow-js). There are no dictionary batches, and record-batch bodies are
// not compressed (a reader rejects IPC body compression). The stream holds
// one table, the node table; everything else travels as schema metadata.
//
// Record batches are cut every MaxBatchRows rows (default 65536) and
// before any batch message would exceed MaxBatchBytes (default 960 KiB),
// so each record-batch message fits a 1 MiB broker message; batch
// boundaries carry no meaning (they may split a tree) and do not change
// the checksum or the model ID.
//
// # Node table (format 5, the compact layout)
//
// EncodeBytes and WriteFile write format version 5. Its node table has two columns and no
// nulls:
//
//	column   type     meaning
//	split    int32    a node's split code, or a list row (below)
//	value    float32  a node's threshold or single-output regression
//	                  value, or a list row's value
//
// The first forestd.nodes rows are the nodes of every tree, trees in
// order, each tree in preorder: node 0 of a tree is its root, an internal
// node's left child is the next row and its right child the row after
// its left subtree, so no child is stored and a tree ends where its
// preorder closes (a tree node's index is its row within the tree, as in
// format 4; forestd.drf's leaf memberships keep their meaning). The split
// code u (as uint32) of a node is:
//
//	u < 2^31          axis split: feature u & (2^30−1) (one atom entry of
//	                  weight 1); missing values go left when bit 30 is set;
//	                  value is the threshold (go left when x ≤ threshold)
//	u >> 30 == 0b10   leaf: bits 0–29 name its leaf list; a single-output
//	                  regression leaf names list 0 of none and its value is
//	                  the leaf's mean; any other leaf's value is 0
//	u >> 30 == 0b11   oblique split: bits 0–28 name its atom (counted from
//	                  the first atom list), missing values go left when bit
//	                  29 is set; value is the threshold
//
// The rows after the nodes are lists: forestd.layout
// ({"leaf_lists":L,"atom_lists":A}, compact JSON) counts them. Each list
// is a row (split = its entry count e ≥ 1, value = 0) followed by e entry
// rows (split = key, value = value): first the L leaf lists — (class,
// frequency) with increasing classes whose frequencies sum to 1 for
// classification, (output, value) for outputs 0..q−1 of a multi-output
// regression leaf — then the A atoms, (feature, weight). Equal lists are
// stored once, and nodes name each kind of list in order of first use,
// every list at least once, so a forest has exactly one encoding. A node
// takes 8 bytes; the lists of a forest whose leaves are pure take almost
// none (a Trunk forest of 895,664 nodes: 7.17 MB, 8.0 bytes a node;
// format 4: 44.9 MB, 50.2).
//
// Leaf values are float32: the precision scoring has always added them
// in (forest.Compile), so a forest scores the same bits from format 4
// and 5 (scoring's TestFormat4Models). Two tree.Tree fields are not
// stored: Count (the in-bag weight; decoded as 0) and MissingLeft of a
// leaf (false); a leaf value outside float32's range cannot be encoded.
// A forest whose trees are not in preorder (Train grows them in
// preorder) cannot be encoded.
//
// # Node table (formats 1–4)
//
// Models written before format 5 still decode. One row per node across
// all trees, trees in order, nodes of a tree in index order (node 0 is
// the root). No value is ever null.
//
//	column        type            meaning
//	tree          int32           tree index, 0..trees-1, non-decreasing by steps of 1
//	node          int32           node index within its tree, 0..n-1
//	left          int32           left child (tree-local index), -1 for a leaf
//	right         int32           right child, -1 for a leaf
//	threshold     float32         split threshold: go left when a·x ≤ threshold
//	missing_left  bool            direction when a·x is NaN (a missing value)
//	count         float32         in-bag weight at the node
//	atom_feature  list<int32>     projection atom: feature indices (empty for a leaf)
//	atom_weight   list<float32>   projection atom: weights, same length as atom_feature
//	leaf_class    list<int32>     classification leaf: class indices of the non-zero
//	                              frequencies; empty for internal nodes and for
//	                              every node of a regression model
//	leaf_value    list<float64>   classification leaf: the frequencies, paired with
//	                              leaf_class; regression leaf: one value, the mean;
//	                              empty for internal nodes
//
// Feature indices refer to forestd.features, class indices to
// forestd.classes. The lists are Arrow list<T> with non-nullable elements.
// This is tree.Tree laid out row-wise: AtomStart and LeafStart are the
// list offsets rebased to each tree.
//
// # Schema metadata
//
// All values are UTF-8 strings; JSON values are compact (encoding/json).
// Non-finite floats inside JSON are written as the strings "NaN", "+Inf"
// and "-Inf". Keys not starting with "forestd." are ignored by readers and
// not covered by the checksum; an unknown "forestd." key is an error.
//
//	forestd.format          "forestd-model"
//	forestd.format_version  "5" (decimal; "1" to "4", the lowest that held
//	                        the model, in files of earlier versions); a
//	                        reader rejects a larger number with "model
//	                        format version N is newer than this forestd
//	                        supports (5); upgrade forestd"
//	forestd.model_id        content hash, see below
//	forestd.model_version   caller-chosen model version, decimal, 0 to
//	                        MaxVersion = 2^62 − 1 (so version + 1 never wraps)
//	forestd.created_by      writer, e.g. "forestd dev"
//	forestd.kind            forest kind, e.g. "rf"
//	forestd.task            "classification" or "regression"
//	forestd.label           label column name
//	forestd.features        JSON array of feature names (index order)
//	forestd.levels          JSON: null, or one entry per feature, null for a
//	                        numeric feature or the array of category levels
//	forestd.classes         JSON array of class names; null for regression
//	forestd.params          JSON object of the training options (forest.Params;
//	                        Threads is not stored, it never changes the model)
//	forestd.oob             JSON object of the out-of-bag estimates (forest.OOB);
//	                        absent when the forest has none
//	forestd.importances     JSON object: importance kind → array of one value per
//	                        feature in feature order; {} when there are none
//	forestd.drf             only for kind "drf" (distance random forests): JSON
//	                        object of forest.DRF — targets, distance, isomap_k,
//	                        projection, sigma_g, gamma_g, input_rows, rows (N),
//	                        dim (m); responses (N×q), embedding (N×m),
//	                        eigenvalues (m) and coef (N×q) as base64 of
//	                        little-endian float64, row-major; leaves as base64
//	                        of one unsigned varint per tree and training row
//	                        (leaf node index + 1, 0 = out of bag). Every field
//	                        is required; see model/drf.go. Its size grows with
//	                        trees × N, so keep N (forestd train --max-rows)
//	                        moderate when models travel as 1 MiB messages.
//	forestd.derived         only for an RF_FDM forest with landmark mappings
//	                        (kind "fdm", fdm_map "drl"): JSON {"norms":[{"inputs":
//	                        [...],"centre":[...]}]}, one group norm per feature
//	                        group, the derived input columns that end
//	                        forestd.features (forest.Derived); strict decoder,
//	                        checked by forest.Validate. See model/derived.go.
//	forestd.mapping         only for a forest trained behind a feature mapping
//	                        (forest.Mapping, FDM_RF): the fdm.Transform as the
//	                        JSON mapping file of forestd select (format
//	                        "forestd-fdm/1", compact), read with its strict
//	                        decoder fdm.ReadTransform; its output columns must
//	                        equal forestd.features. See model/mapping.go.
//	forestd.tuning          only for a forest trained with out-of-bag tuning
//	                        (forestd train --tune; forestd.params then has
//	                        "tune": true, and without tuning neither appears):
//	                        JSON of forest.Tuning — metric, rounds (per stage,
//	                        the trees per candidate of each round), candidates
//	                        (each with its stage, tuned settings, the tree
//	                        counts it was scored at with scores, briers and
//	                        oob_errors, winner), winner (index), search_trees;
//	                        strict decoder, checked by forest.Validate.
//	                        See model/tuning.go.
//	forestd.trees           number of trees, decimal
//	forestd.nodes           number of tree nodes, decimal (format 1–4: every
//	                        row is one)
//	forestd.layout          format 5 only, required there: the list counts
//	                        of the node table (above)
//	forestd.checksum        "crc32c:" + 8 lowercase hex digits, see below
//
// # Reference sample
//
// A model may carry a reference sample of its training rows for drift
// tests under the key "forestd-reference" (keyReference, reference.go).
// It is optional and a section of its own: outside "forestd.", so the
// checksum and model ID do not cover it and readers that predate it
// ignore it; it carries its own CRC-32C and the model ID it was written
// for, and decoding refuses it (ErrCorrupt) when either does not match.
//
// # Canonical content, checksum and model ID
//
// The canonical serialization C is the following byte string; integers
// are unsigned little-endian (u8, u32, u64), floats are their IEEE-754 bit
// patterns as u32 (float32) or u64 (float64), bools one byte 0 or 1:
//
//	"forestd-model-canonical-v1\n"                        27 ASCII bytes
//	u32 M                                                 number of covered metadata entries
//	M × ( u32 len(key) ‖ key ‖ u32 len(value) ‖ value )   sorted by key, bytewise ascending
//	u64 N                                                 number of node-table rows
//	u32 K                                                 number of columns (11; 2 in format 5)
//	K × ( u32 len(name) ‖ name ‖ u8 type ‖ data )         in schema order
//
// The covered metadata entries are all schema metadata entries whose key
// starts with "forestd." except forestd.checksum and forestd.model_id.
// Type codes: 0x01 int32, 0x02 float32, 0x03 float64, 0x04 bool, and
// 0x10|element for a list (0x11 list<int32>, 0x12 list<float32>, 0x13
// list<float64>). A scalar column's data is its N values in row order; a
// list column's data is N u32 element counts (one per row, in row order)
// followed by all elements of all rows in row order. C depends only on
// the values, never on how the rows are cut into record batches.
//
//	forestd.checksum = "crc32c:" + %08x of CRC-32C(C)  (Castagnoli polynomial,
//	                   as Go's hash/crc32 with crc32.Castagnoli)
//	forestd.model_id = lowercase hex of SHA-256(C)      (64 digits)
//
// The model ID is therefore content-addressed: the same forest, model
// version and created-by always give the same ID, and so do the same
// bytes. Encoding is deterministic: equal inputs give byte-identical
// streams (no timestamps, maps written in sorted order).
//
// # Decoding guarantees
//
// DecodeBytes, ReadFile and DecodeCompiled fail with the first problem
// they meet, as a one-line error that matches (errors.Is) one of these
// sentinels:
//
//   - ErrNotModel: not an Arrow IPC stream (an Arrow IPC file is named as
//     such), or an Arrow stream without forestd.format = "forestd-model".
//   - ErrFutureVersion: forestd.format_version is larger than
//     FormatVersion; nothing else is interpreted.
//   - ErrTruncated: the input ends before the end-of-stream marker, at a
//     message boundary or inside a message (so any strict prefix of a
//     model, including one ending exactly after a record batch).
//   - ErrChecksum: forestd.checksum or forestd.model_id does not match C.
//   - ErrCorrupt: anything else — undecodable IPC (flatbuffers are verified
//     against their bounds before Arrow reads them, buffer sizes and list
//     offsets are checked, nulls are rejected), a wrong schema, a row or
//     tree count different from forestd.nodes or forestd.trees, bad JSON,
//     a model version outside 0..MaxVersion, or a forest failing
//     forest.Validate — the one check of meaning, made once per load:
//     trees that are trees (each node but the root the child of exactly
//     one node, children after parents), finite leaf values and class
//     frequencies that are distributions, distinct feature and class
//     names, classes bounded by those the leaves name
//     (forest.MaxUnnamedClasses), consistent metadata (task vs classes,
//     levels or importances vs features, valid UTF-8). The codec itself
//     checks the format (types, lengths, offsets, counts). A file whose
//     checksum was recomputed over nonsense is still rejected.
//
// Format 5 is checked the same way: the list framing by the codec, the
// node codes, the trees they close into and the lists' meaning by
// forest.Compact (forest.CompileCompact when DecodeCompiled compiles the
// table straight into the scoring layout without trees, its one
// validation; Compact.Trees and forest.Validate for DecodeBytes and
// ReadFile).
//
// A forest they return is therefore safe to score: every child, feature
// and class index is in range. Their memory use is bounded by a
// constant factor of the bytes actually read, whatever lengths a corrupt
// stream claims.
//
// # Extending the format
//
// The node-table columns are listed once, in nodeColumns (columns.go), and
// the metadata keys once, in metaKeys (meta.go); tests fail when a field of
// tree.Tree or forest.Forest is not carried by either. Adding a column or a
// key changes what older readers accept, so it needs a new FormatVersion;
// the writer stamps each model with the lowest version that holds it
// (formatVersionFor), so models that use nothing new stay readable by older
// readers, and a reader refuses a stream whose claimed version cannot hold
// what it carries. Version 2 added forestd.mapping, forestd.derived and the
// offset and selection fields of forestd.drf; version 3 forestd.targets;
// version 4 forestd.tuning and the "tune" field of forestd.params;
// version 5 the compact node table (columns split and value, and
// forestd.layout), which every model since has.
//
// A new section — say a reference sample of training rows — is a new
// optional metadata key in metaKeys (its encoder returns ok=false when a
// model has none, its decoder is strict, fields names the forest.Forest
// field it carries), or, when it is large, a new kind of list rows after
// the atoms counted by a new forestd.layout field. Either way
// formatVersionFor must return 6 for a model that has it, and the encoder
// stamp that: a version-5 reader then refuses such a model with
// ErrFutureVersion ("upgrade forestd") instead of ErrCorrupt, and models
// without the section stay version 5, readable by version-5 readers.
package model
