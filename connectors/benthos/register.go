package benthos

import (
	"errors"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Processor names.
const (
	ScoreName  = "forestd_score"
	SelectName = "forestd_select"
	TrainName  = "forestd_train"
	DriftName  = "forestd_drift"
)

// Register adds forestd_score, forestd_select, forestd_train and
// forestd_drift to env.
// Importing the package registers them in Benthos' global environment,
// which service.RunCLI and service.NewStreamBuilder use.
func Register(env *service.Environment) error {
	return errors.Join(
		env.RegisterBatchProcessor(ScoreName, scoreSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchProcessor, error) {
			return newScoreProc(conf, mgr)
		}),
		env.RegisterBatchProcessor(SelectName, selectSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchProcessor, error) {
			return newSelectProc(conf, mgr)
		}),
		env.RegisterBatchProcessor(TrainName, trainSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchProcessor, error) {
			return newTrainProc(conf, mgr)
		}),
		env.RegisterBatchProcessor(DriftName, driftSpec(), func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchProcessor, error) {
			return newDriftProc(conf, mgr)
		}),
	)
}

func init() {
	// The specs are constants of this package and TestRegister registers
	// them into a fresh environment: an error here is a bug in them.
	if err := Register(service.GlobalEnvironment()); err != nil {
		panic("forestd benthos processors: " + err.Error())
	}
}
