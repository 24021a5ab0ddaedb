package txn

// State is a transaction's state as Kafka's TransactionState has it. The
// numbers are the ones __transaction_state records carry (TxnMetadataValue
// State); PrepareEpochFence and Dead never reach the log: the first is an
// in-memory step on the way to PrepareAbort, the second a tombstone.
type State int8

const (
	StateEmpty             State = 0
	StateOngoing           State = 1
	StatePrepareCommit     State = 2
	StatePrepareAbort      State = 3
	StateCompleteCommit    State = 4
	StateCompleteAbort     State = 5
	StateDead              State = 6
	StatePrepareEpochFence State = 7
)

var stateNames = [...]string{
	StateEmpty:             "Empty",
	StateOngoing:           "Ongoing",
	StatePrepareCommit:     "PrepareCommit",
	StatePrepareAbort:      "PrepareAbort",
	StateCompleteCommit:    "CompleteCommit",
	StateCompleteAbort:     "CompleteAbort",
	StateDead:              "Dead",
	StatePrepareEpochFence: "PrepareEpochFence",
}

// String is the name DescribeTransactions and ListTransactions answer with.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// StateByName parses a ListTransactions state filter.
func StateByName(name string) (State, bool) {
	for s, n := range stateNames {
		if n == name {
			return State(s), true
		}
	}
	return 0, false
}

// validPrevious is Kafka's TransactionState.validPreviousStates: the states
// a transaction may come from into each state.
var validPrevious = map[State][]State{
	StateEmpty:         {StateEmpty, StateCompleteCommit, StateCompleteAbort},
	StateOngoing:       {StateOngoing, StateEmpty, StateCompleteCommit, StateCompleteAbort},
	StatePrepareCommit: {StateOngoing},
	// TV2 may abort a transaction that has no partition (Kafka 4.0).
	StatePrepareAbort:      {StateOngoing, StatePrepareEpochFence, StateEmpty, StateCompleteCommit, StateCompleteAbort},
	StateCompleteCommit:    {StatePrepareCommit},
	StateCompleteAbort:     {StatePrepareAbort},
	StateDead:              {StateEmpty, StateCompleteAbort, StateCompleteCommit},
	StatePrepareEpochFence: {StateOngoing},
}

// validTransition reports whether a transaction in from may move to to.
func validTransition(from, to State) bool {
	for _, p := range validPrevious[to] {
		if p == from {
			return true
		}
	}
	return false
}

// completed reports whether no transaction is running: the states from
// which a new one may begin, and in which an idle id may expire.
func (s State) completed() bool {
	return s == StateEmpty || s == StateCompleteCommit || s == StateCompleteAbort
}
