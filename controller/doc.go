// Package controller is Brook's metadata path, shared by the single-node
// broker (embedded store) and a ZooKeeper cluster: the znode layout and JSON
// of Kafka's ZooKeeper mode (zkdata.go), broker-side helpers that any broker
// calls (RegisterBroker, EnsureClusterID, CreateTopics, DeleteTopics,
// CreatePartitions, topic configs, producer id blocks), and the controller
// itself: election through /controller, pure decisions (decide.go) and an
// event loop that writes partition state and tells brokers with
// LeaderAndISR, UpdateMetadata and StopReplica through a Sender.
//
// Layout (all JSON as Kafka 3.x writes it):
//
//	/brokers/ids/<id>                        ephemeral broker registration (v5)
//	/brokers/topics/<t>                      {"version":3,"partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{},"topic_id":".."}
//	/brokers/topics/<t>/partitions/<p>/state {"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}
//	/controller                              ephemeral {"version":2,"brokerid":1,"timestamp":"..","kraftControllerEpoch":-1}
//	/controller_epoch                        "1"
//	/config/topics/<t>                       {"version":1,"config":{..}}
//	/config/changes/config_change_<seq>      {"version":2,"entity_path":"topics/<t>"}
//	/admin/delete_topics/<t>                 deletion marker
//	/admin/reassign_partitions               {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}
//	/cluster/id                              {"version":"1","id":".."}
//	/latest_producer_id_block                {"version":1,"broker":1,"block_start":"0","block_end":"999"}
//	/log_dir_event_notification/log_dir_event_<seq> {"version":1,"broker":1,"event":1}
//
// A broker uses it like this (single node: embedded store; cluster: a
// zkstore.Store on zookeeper.connect; the calls are the same):
//
//	db, _ := store.Open(store.Options{Dir: logDir, Logger: log}) // brook-metadata.json
//	sess := db.NewSession()                                     // or zkstore.Dial(ctx, ...)
//	clusterID, _ := controller.EnsureClusterID(ctx, sess)       // compare with meta.properties
//	brokerEpoch, _ := controller.RegisterBroker(ctx, sess, controller.BrokerInfo{...})
//	ctrl := controller.New(controller.Config{BrokerID: id, ...}, sess, sender)
//	go ctrl.Run(ctx) // returns store.ErrSessionExpired if the session dies
//
// The sender delivers LeaderAndISR, UpdateMetadata and StopReplica to the
// broker's handlers (in-process for itself). UpdateMetadata partition
// states are upserts; a partition with leader -2 (LeaderDuringDelete)
// belongs to a topic being deleted and must be dropped from the metadata
// cache. An UpdateMetadata without partitions only updates live brokers.
// CreateTopics, DeleteTopics and CreatePartitions are served only where
// ctrl.IsActive() (else NOT_CONTROLLER); Metadata's controller_id is
// ctrl.ActiveID(). AlterPartition and ControlledShutdown go to
// ctrl.AlterPartition / ctrl.ControlledShutdown; AlterPartitionReassignments
// and ListPartitionReassignments to the methods of those names
// (reassign.go holds the reassignment state machine).
//
// Run drives the controller with goroutines (a forwarder per watch, one
// per broker channel, time's timers). The same controller runs without
// any of its own through its step form (step.go): NewStepped with an Env
// that delivers watches, request answers and timers as calls on the
// driver's goroutine, which calls TryElect, StartTerm, Step and Resign;
// the deterministic simulation (sim/) drives it so.
package controller
