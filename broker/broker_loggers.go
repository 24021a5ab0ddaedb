package broker

import (
	"errors"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/logging"
)

// The BROKER_LOGGER resource (type 8) of DescribeConfigs and
// IncrementalAlterConfigs, as Kafka's RuntimeLoggerManager: describing
// lists every logger with its effective level; SET gives a logger a level
// (TRACE, DEBUG, INFO, WARN, ERROR or FATAL, upper case), DELETE removes
// it so that it inherits again (never for root); APPEND and SUBTRACT are
// refused. Every change of a request is checked before any applies.

// checkLoggerResource accepts only this broker's id: unlike the BROKER
// resource, the empty name has no meaning here.
func (b *Broker) checkLoggerResource(name string) (int16, string) {
	if name == "" {
		return kerr.InvalidRequest.Code, "Broker id must not be empty"
	}
	if id, err := strconv.Atoi(name); err != nil || int32(id) != b.cfg.BrokerID {
		return kerr.InvalidRequest.Code, "Unexpected broker id, expected " + strconv.Itoa(int(b.cfg.BrokerID)) + " but received " + name
	}
	return 0, ""
}

func (b *Broker) describeLoggers(name string) ([]config.ConfigEntry, int16, string) {
	if code, msg := b.checkLoggerResource(name); code != 0 {
		return nil, code, msg
	}
	levels := b.loggers.Levels()
	entries := make([]config.ConfigEntry, len(levels))
	for i, l := range levels {
		entries[i] = config.ConfigEntry{Name: l.Name, Value: l.Level, Source: config.SourceDynamicBrokerLogger}
	}
	return entries, 0, ""
}

func (b *Broker) alterLoggers(name string, changes []configChange, replace, validateOnly bool) (int16, string) {
	if replace {
		return kerr.InvalidRequest.Code, "AlterConfigs is deprecated and does not support the resource type BROKER_LOGGER"
	}
	if code, msg := b.checkLoggerResource(name); code != 0 {
		return code, msg
	}
	for _, c := range changes {
		if c.op != kmsg.IncrementalAlterConfigOpDelete && c.value == nil {
			return kerr.InvalidRequest.Code, "Null value not supported for : " + c.name
		}
	}
	for _, c := range changes {
		var err error
		switch c.op {
		case kmsg.IncrementalAlterConfigOpSet:
			err = b.loggers.CheckSet(c.name, *c.value)
		case kmsg.IncrementalAlterConfigOpDelete:
			err = b.loggers.CheckUnset(c.name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			return kerr.InvalidRequest.Code, c.op.String() + " operation is not allowed for the BROKER_LOGGER resource"
		default:
			return kerr.InvalidRequest.Code, "Unknown operation type " + strconv.Itoa(int(c.op)) + " is not allowed for the BROKER_LOGGER resource"
		}
		if err != nil {
			return loggerErrorCode(err), loggerErrorMessage(err, c)
		}
	}
	if validateOnly {
		return 0, ""
	}
	for _, c := range changes {
		var err error
		if c.op == kmsg.IncrementalAlterConfigOpSet {
			err = b.loggers.Set(c.name, *c.value)
			b.logger.Warn("updated the log level", "target", c.name, "level", *c.value)
		} else {
			err = b.loggers.Unset(c.name)
			b.logger.Warn("unset the log level", "target", c.name)
		}
		if err != nil { // checked above; only a logger registered meanwhile could differ
			return loggerErrorCode(err), err.Error()
		}
	}
	return 0, ""
}

// loggerErrorMessage is Kafka's message for a refused change.
func loggerErrorMessage(err error, c configChange) string {
	switch {
	case errors.Is(err, logging.ErrNoSuchLogger):
		return "Logger " + c.name + " does not exist!"
	case errors.Is(err, logging.ErrInvalidLevel):
		return "Cannot set the log level of " + c.name + " to " + *c.value + " as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"
	case errors.Is(err, logging.ErrRootRequired):
		return "Removing the log level of the root logger is not allowed"
	}
	return err.Error()
}

// loggerErrorCode maps logging's errors as Kafka's exceptions map: an
// unknown logger or level is InvalidConfigurationException, removing
// root's level InvalidRequestException.
func loggerErrorCode(err error) int16 {
	if errors.Is(err, logging.ErrRootRequired) {
		return kerr.InvalidRequest.Code
	}
	return kerr.InvalidConfig.Code
}
