package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/forestd/forestd/arrowforest/forest"
	"github.com/forestd/forestd/arrowforest/frame"
)

// Meta describes one encoded model beyond the forest itself.
type Meta struct {
	// ID is the content hash of the model (64 lowercase hex digits of a
	// SHA-256, see doc.go). Encode ignores it on input and computes it;
	// Decode returns the verified value.
	ID string
	// Version is the model version chosen by the caller (e.g. a retrain
	// counter). It is part of the hashed content.
	Version int64
	// CreatedBy names the writer, e.g. "forestd dev". Part of the hashed
	// content; must be valid UTF-8.
	CreatedBy string
	// Reference, when set, is the model's reference sample
	// (SampleReference), a section of its own outside the checksum and
	// the ID (keyReference, reference.go); nil when the model has none.
	Reference arrow.Record
}

// MaxVersion is the largest model version, 2^62 − 1: versions run from 0
// to MaxVersion, so the next version (NextVersion) never wraps round to a
// negative one, and a model claiming more (2^63 − 1 on the model topic)
// is refused before anything adopts it.
const MaxVersion = 1<<62 - 1

// ErrVersionLimit: a model of version MaxVersion has no next version.
var ErrVersionLimit = errors.New("model version limit reached")

// NextVersion is the version of a model that replaces one of version v
// (a retrain): v + 1. Past MaxVersion (or for a v outside 0..MaxVersion)
// it fails with an error that matches ErrVersionLimit, so that a trainer
// stops instead of writing a version that wraps.
func NextVersion(v int64) (int64, error) {
	if v < 0 || v >= MaxVersion {
		return 0, fmt.Errorf("%w: the current model has version %d and versions stop at %d (model.MaxVersion); publish a model with a lower version to go on", ErrVersionLimit, v, int64(MaxVersion))
	}
	return v + 1, nil
}

// checkVersion refuses a model version outside 0..MaxVersion.
func checkVersion(v int64) error {
	if v < 0 || v > MaxVersion {
		return fmt.Errorf("model version %d outside 0..%d", v, int64(MaxVersion))
	}
	return nil
}

// Format identification.
const (
	// FormatName is the value of forestd.format.
	FormatName = "forestd-model"
	// FormatVersion is the newest format version this package reads and
	// writes. Version 2 added forestd.mapping, forestd.derived and the
	// backscoring offset and selection fields of forestd.drf; a model that
	// uses none of them is still written as version 1 (formatVersionFor),
	// so version-1 readers keep reading it, and a version-1 reader given a
	// model that needs version 2 says so (ErrFutureVersion) instead of
	// calling an unknown key corrupt. Version 3 added forestd.targets
	// (multi-output regression forests), version 4 forestd.tuning and the
	// "tune" param (forests trained with out-of-bag tuning). Version 5 is
	// the compact node table (compact.go), which Encode writes for every
	// model; encodeFormat4 still writes the table of versions 1–4.
	FormatVersion = 5
)

// formatVersionFor is the lowest format version that holds f.
func formatVersionFor(f *forest.Forest) int {
	if f.Tuning != nil || f.Params.Tune {
		return 4
	}
	if f.Targets != nil {
		return 3
	}
	if f.Mapping != nil || f.Derived != nil {
		return 2
	}
	if d := f.DRF; d != nil && (d.Offset != nil || d.SelectedBy != "" || d.SelectMSE != 0) {
		return 2
	}
	return 1
}

// IsModelSchema reports whether schema is a model file's (its metadata
// says forestd.format = FormatName): a reader of data given a model by
// mistake can say so instead of missing the features in a table of nodes.
func IsModelSchema(schema *arrow.Schema) bool {
	if schema == nil {
		return false
	}
	md := schema.Metadata()
	i := md.FindKey(KeyFormat)
	return i >= 0 && md.Values()[i] == FormatName
}

// Schema metadata keys.
const (
	KeyFormat        = "forestd.format"
	KeyFormatVersion = "forestd.format_version"
	keyModelID       = "forestd.model_id"
	keyModelVersion  = "forestd.model_version"
	keyCreatedBy     = "forestd.created_by"
	keyKind          = "forestd.kind"
	keyTask          = "forestd.task"
	keyLabel         = "forestd.label"
	keyFeatures      = "forestd.features"
	keyLevels        = "forestd.levels"
	keyClasses       = "forestd.classes"
	keyTargets       = "forestd.targets"
	keyParams        = "forestd.params"
	keyOOB           = "forestd.oob"
	keyImportances   = "forestd.importances"
	keyRank          = "forestd.rank"
	keyTrees         = "forestd.trees"
	keyNodes         = "forestd.nodes"
	keyChecksum      = "forestd.checksum"

	keyPrefix = "forestd."
)

// metaEntry is one schema metadata key/value.
type metaEntry struct{ key, value string }

// decodeState collects what the metadata decoders produce.
type decodeState struct {
	version      int // forestd.format_version of the stream
	f            *forest.Forest
	meta         Meta
	trees, nodes int64
	layout       *layout // forestd.layout (format 5)
}

// metaKey describes one metadata entry: how to write it and how to read it
// back. metaKeys is the single list of them (forestd.model_id and
// forestd.checksum are added by the writer, see write).
type metaKey struct {
	key string
	// fields names the forest.Forest fields this key carries (checked by a
	// test so that a new Forest field cannot be silently dropped).
	fields []string
	// optional keys may be absent (enc returns ok=false).
	optional bool
	enc      func(f *forest.Forest, m Meta, nodes int) (v string, ok bool, err error)
	// dec parses v into st; nil for keys handled before the others
	// (format, format_version).
	dec func(v string, st *decodeState) error
}

var metaKeys = []metaKey{
	{key: KeyFormat,
		enc: func(*forest.Forest, Meta, int) (string, bool, error) { return FormatName, true, nil }},
	{key: KeyFormatVersion,
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
			return strconv.Itoa(formatVersionFor(f)), true, nil
		}},
	{key: keyModelVersion,
		enc: func(_ *forest.Forest, m Meta, _ int) (string, bool, error) {
			return strconv.FormatInt(m.Version, 10), true, nil
		},
		dec: func(v string, st *decodeState) (err error) {
			if st.meta.Version, err = strconv.ParseInt(v, 10, 64); err != nil {
				return err
			}
			return checkVersion(st.meta.Version)
		}},
	{key: keyCreatedBy,
		enc: func(_ *forest.Forest, m Meta, _ int) (string, bool, error) { return m.CreatedBy, true, nil },
		dec: func(v string, st *decodeState) error { st.meta.CreatedBy = v; return nil }},
	{key: keyKind, fields: []string{"Kind"},
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) { return string(f.Kind), true, nil },
		dec: func(v string, st *decodeState) (err error) { st.f.Kind, err = forest.ParseKind(v); return err }},
	{key: keyTask, fields: []string{"Task"},
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) { return f.Task.String(), true, nil },
		dec: func(v string, st *decodeState) error {
			switch v {
			case frame.TaskClassification.String():
				st.f.Task = frame.TaskClassification
			case frame.TaskRegression.String():
				st.f.Task = frame.TaskRegression
			default:
				return fmt.Errorf("unknown task %q", v)
			}
			return nil
		}},
	{key: keyLabel, fields: []string{"LabelName"},
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) { return f.LabelName, true, nil },
		dec: func(v string, st *decodeState) error { st.f.LabelName = v; return nil }},
	{key: keyFeatures, fields: []string{"Features"},
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) { return jsonString(f.Features) },
		dec: func(v string, st *decodeState) error { return json.Unmarshal([]byte(v), &st.f.Features) }},
	{key: keyLevels, fields: []string{"Levels"},
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) { return jsonString(f.Levels) },
		dec: func(v string, st *decodeState) error { return json.Unmarshal([]byte(v), &st.f.Levels) }},
	{key: keyClasses, fields: []string{"Classes"},
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) { return jsonString(f.Classes) },
		dec: func(v string, st *decodeState) error { return json.Unmarshal([]byte(v), &st.f.Classes) }},
	{key: keyTargets, fields: []string{"Targets"}, optional: true,
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
			if f.Targets == nil {
				return "", false, nil
			}
			return jsonString(f.Targets)
		},
		dec: func(v string, st *decodeState) error {
			if err := json.Unmarshal([]byte(v), &st.f.Targets); err != nil {
				return err
			}
			if st.f.Targets == nil {
				return fmt.Errorf("not a JSON array")
			}
			return nil
		}},
	{key: keyParams, fields: []string{"Params"},
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
			s, err := marshalStruct(f.Params)
			return s, true, err
		},
		dec: func(v string, st *decodeState) error { return unmarshalStruct(v, &st.f.Params) }},
	{key: keyOOB, fields: []string{"OOB"}, optional: true,
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
			if f.OOB == nil {
				return "", false, nil
			}
			s, err := marshalStruct(*f.OOB)
			return s, true, err
		},
		dec: func(v string, st *decodeState) error {
			st.f.OOB = new(forest.OOB)
			return unmarshalStruct(v, st.f.OOB)
		}},
	{key: keyImportances, fields: []string{"Importances"},
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
			m := make(map[string][]jsonFloat, len(f.Importances))
			for k, v := range f.Importances {
				m[k] = floatsToJSON(v)
			}
			return jsonString(m)
		},
		dec: func(v string, st *decodeState) error {
			var m map[string][]jsonFloat
			if err := json.Unmarshal([]byte(v), &m); err != nil {
				return err
			}
			if m == nil {
				return fmt.Errorf("not a JSON object")
			}
			if len(m) > 0 {
				st.f.Importances = make(map[string][]float64, len(m))
				for k, x := range m {
					st.f.Importances[k] = floatsFromJSON(x)
				}
			}
			return nil
		}},
	{key: keyRank, fields: []string{"Rank"}, optional: true,
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
			if f.Rank == nil {
				return "", false, nil
			}
			return jsonString(f.Rank)
		},
		dec: func(v string, st *decodeState) error {
			st.f.Rank = new(forest.RankMap)
			return json.Unmarshal([]byte(v), st.f.Rank)
		}},
	{key: keyDRF, fields: []string{"DRF"}, optional: true, enc: encodeDRF, dec: decodeDRF},                 // drf.go
	{key: keyDerived, fields: []string{"Derived"}, optional: true, enc: encodeDerived, dec: decodeDerived}, // derived.go
	{key: keyMapping, fields: []string{"Mapping"}, optional: true, enc: encodeMapping, dec: decodeMapping}, // mapping.go
	{key: keyTuning, fields: []string{"Tuning"}, optional: true, enc: encodeTuning, dec: decodeTuning},     // tuning.go
	{key: keyTrees, fields: []string{"Trees"},
		enc: func(f *forest.Forest, _ Meta, _ int) (string, bool, error) {
			return strconv.Itoa(len(f.Trees)), true, nil
		},
		dec: func(v string, st *decodeState) (err error) { st.trees, err = parseCount(v); return err }},
	{key: keyLayout, optional: true, dec: decodeLayout, // compact.go; written by encodeCompact
		enc: func(*forest.Forest, Meta, int) (string, bool, error) { return "", false, nil }},
	{key: keyNodes,
		enc: func(_ *forest.Forest, _ Meta, nodes int) (string, bool, error) {
			return strconv.Itoa(nodes), true, nil
		},
		dec: func(v string, st *decodeState) (err error) { st.nodes, err = parseCount(v); return err }},
}

// encodeMeta returns the metadata entries covered by the checksum, in
// metaKeys order.
func encodeMeta(f *forest.Forest, m Meta, nodes int) ([]metaEntry, error) {
	out := make([]metaEntry, 0, len(metaKeys))
	for _, k := range metaKeys {
		v, ok, err := k.enc(f, m, nodes)
		if err != nil {
			return nil, fmt.Errorf("metadata %s: %w", k.key, err)
		}
		if ok {
			out = append(out, metaEntry{k.key, v})
		}
	}
	return out, nil
}

func lookupMetaKey(key string) *metaKey {
	for i := range metaKeys {
		if metaKeys[i].key == key {
			return &metaKeys[i]
		}
	}
	return nil
}

func parseCount(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a count: %q", v)
	}
	return n, nil
}

func jsonString(v any) (string, bool, error) {
	b, err := json.Marshal(v)
	return string(b), true, err
}

// jsonFloat is a float64 that survives JSON when non-finite: NaN, +Inf and
// -Inf are written as the strings "NaN", "+Inf" and "-Inf".
type jsonFloat float64

func (x jsonFloat) MarshalJSON() ([]byte, error) {
	if s, ok := nonFiniteName(float64(x)); ok {
		return []byte(strconv.Quote(s)), nil
	}
	return json.Marshal(float64(x))
}

func (x *jsonFloat) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		f, ok := parseNonFinite(s)
		if !ok {
			return fmt.Errorf("bad number %q", s)
		}
		*x = jsonFloat(f)
		return nil
	}
	if string(b) == "null" {
		return fmt.Errorf("null where a number is required")
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*x = jsonFloat(f)
	return nil
}

func floatsToJSON(v []float64) []jsonFloat {
	out := make([]jsonFloat, len(v))
	for i, x := range v {
		out[i] = jsonFloat(x)
	}
	return out
}

func floatsFromJSON(v []jsonFloat) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func nonFiniteName(x float64) (string, bool) {
	switch {
	case math.IsNaN(x):
		return "NaN", true
	case math.IsInf(x, 1):
		return "+Inf", true
	case math.IsInf(x, -1):
		return "-Inf", true
	}
	return "", false
}

func parseNonFinite(s string) (float64, bool) {
	switch s {
	case "NaN":
		return math.NaN(), true
	case "+Inf":
		return math.Inf(1), true
	case "-Inf":
		return math.Inf(-1), true
	}
	return 0, false
}

// marshalStruct encodes a flat struct (forest.Params, forest.OOB) as JSON
// by its json tags, writing non-finite float fields as the strings "NaN",
// "+Inf" or "-Inf" (plain encoding/json refuses them). New fields of the
// struct are picked up without changes here.
func marshalStruct(v any) (string, error) {
	rv := reflect.ValueOf(v)
	cp := reflect.New(rv.Type()).Elem()
	cp.Set(rv)
	special := map[string]string{}
	for i := 0; i < cp.NumField(); i++ {
		sf, fv := cp.Type().Field(i), cp.Field(i)
		if !sf.IsExported() || (fv.Kind() != reflect.Float64 && fv.Kind() != reflect.Float32) {
			continue
		}
		s, bad := nonFiniteName(fv.Float())
		name, tagged := jsonFieldName(sf)
		if !bad || !tagged {
			continue
		}
		special[name] = s
		fv.SetFloat(0)
	}
	b, err := json.Marshal(cp.Interface())
	if err != nil || len(special) == 0 {
		return string(b), err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return "", err
	}
	for k, s := range special {
		m[k] = json.RawMessage(strconv.Quote(s))
	}
	b, err = json.Marshal(m)
	return string(b), err
}

// unmarshalStruct is the inverse of marshalStruct. ptr points to a struct.
func unmarshalStruct(data string, ptr any) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("not a JSON object")
	}
	rv := reflect.ValueOf(ptr).Elem()
	type fix struct {
		field int
		val   float64
	}
	var fixes []fix
	for i := 0; i < rv.NumField(); i++ {
		sf, fv := rv.Type().Field(i), rv.Field(i)
		if !sf.IsExported() || (fv.Kind() != reflect.Float64 && fv.Kind() != reflect.Float32) {
			continue
		}
		name, tagged := jsonFieldName(sf)
		raw, ok := m[name]
		if !tagged || !ok || len(raw) == 0 || raw[0] != '"' {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		x, ok := parseNonFinite(s)
		if !ok {
			return fmt.Errorf("field %s: bad number %q", name, s)
		}
		fixes = append(fixes, fix{i, x})
		delete(m, name)
	}
	if len(fixes) > 0 {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		data = string(b)
	}
	if err := json.Unmarshal([]byte(data), ptr); err != nil {
		return err
	}
	for _, f := range fixes {
		rv.Field(f.field).SetFloat(f.val)
	}
	return nil
}

// jsonFieldName returns the JSON key of a struct field, or false when the
// field is not encoded.
func jsonFieldName(sf reflect.StructField) (string, bool) {
	tag := sf.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = sf.Name
	}
	return name, true
}
