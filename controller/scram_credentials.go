package controller

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// Describe/AlterUserScramCredentials as Kafka's ZkAdminManager runs them
// in ZooKeeper mode: credentials are configs of the user entity, named by
// mechanism, in Kafka's text form; iterations are the only thing described.

const (
	usernameMustNotBeEmpty = "Username must not be empty"
	unknownScramMechanism  = "Unknown SCRAM mechanism"
)

func strp(s string) *string { return &s }

// DescribeScramCredentials answers DescribeUserScramCredentials; all
// describes every user with a credential, sorted.
func DescribeScramCredentials(ctx context.Context, st Store, users []string, all bool) *kmsg.DescribeUserSCRAMCredentialsResponse {
	resp := kmsg.NewPtrDescribeUserSCRAMCredentialsResponse()
	describe := func(user string, explicit bool) (kmsg.DescribeUserSCRAMCredentialsResponseResult, bool) {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = user
		cfg, err := UserConfigs(ctx, st, user)
		if err != nil {
			r.ErrorCode, r.ErrorMessage = kerr.UnknownServerError.Code, strp(err.Error())
			return r, true
		}
		for _, m := range auth.ScramMechanisms {
			v, ok := cfg[m.Name]
			if !ok {
				continue
			}
			c, err := auth.ParseScramCredential(v)
			if err != nil {
				r.ErrorCode, r.ErrorMessage = kerr.UnknownServerError.Code, strp(err.Error())
				return r, true
			}
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = m.Type, c.Iterations
			r.CredentialInfos = append(r.CredentialInfos, info)
		}
		if len(r.CredentialInfos) == 0 {
			if !explicit {
				return r, false
			}
			r.ErrorCode, r.ErrorMessage = kerr.ResourceNotFound.Code, strp("Attempt to describe a user credential that does not exist: "+user)
		}
		return r, true
	}
	if all {
		names, err := ScramUsers(ctx, st)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, strp(err.Error())
			return resp
		}
		for _, u := range names {
			if r, ok := describe(u, false); ok {
				resp.Results = append(resp.Results, r)
			}
		}
		return resp
	}
	count := map[string]int{}
	for _, u := range users {
		count[u]++
	}
	seen := map[string]bool{}
	for _, u := range users {
		if seen[u] {
			continue
		}
		seen[u] = true
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u
		switch {
		case u == "":
			r.ErrorCode, r.ErrorMessage = kerr.ResourceNotFound.Code, strp(usernameMustNotBeEmpty)
		case count[u] > 1:
			r.ErrorCode, r.ErrorMessage = kerr.DuplicateResource.Code, strp("Cannot describe SCRAM credentials for the same user twice in a single request: "+u)
		default:
			r, _ = describe(u, true)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// AlterScramCredentials answers AlterUserScramCredentials: per user, all
// of its changes or none. A user with an invalid change (empty name,
// unknown mechanism, iterations out of 4096..16384), the same mechanism
// twice, or a deletion of a credential it does not have is refused whole.
func AlterScramCredentials(ctx context.Context, st Store, req *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse {
	resp := kmsg.NewPtrAlterUserSCRAMCredentialsResponse()
	failed := map[string]bool{}
	fail := func(user string, code int16, msg string) {
		if failed[user] {
			return
		}
		failed[user] = true
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode, r.ErrorMessage = user, code, strp(msg)
		resp.Results = append(resp.Results, r)
	}
	type pair struct {
		user string
		mech int8
	}
	pairs := map[pair]int{}
	for _, d := range req.Deletions {
		if d.Name == "" {
			fail(d.Name, kerr.UnacceptableCredential.Code, usernameMustNotBeEmpty)
		} else if _, ok := auth.ScramMechanismByType(d.Mechanism); !ok {
			fail(d.Name, kerr.UnsupportedSaslMechanism.Code, unknownScramMechanism)
		}
		pairs[pair{d.Name, d.Mechanism}]++
	}
	for _, u := range req.Upsertions {
		m, ok := auth.ScramMechanismByType(u.Mechanism)
		switch {
		case u.Name == "":
			fail(u.Name, kerr.UnacceptableCredential.Code, usernameMustNotBeEmpty)
		case !ok:
			fail(u.Name, kerr.UnsupportedSaslMechanism.Code, unknownScramMechanism)
		case u.Iterations > auth.MaxScramIterations:
			fail(u.Name, kerr.UnacceptableCredential.Code, "Too many iterations")
		case u.Iterations < m.MinIterations:
			fail(u.Name, kerr.UnacceptableCredential.Code, "Too few iterations")
		}
		pairs[pair{u.Name, u.Mechanism}]++
	}
	for p, n := range pairs {
		if n > 1 && !failed[p.user] {
			fail(p.user, kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request")
		}
	}
	changes := map[string]map[string]*string{}
	var users []string
	add := func(user, key string, v *string) {
		if changes[user] == nil {
			changes[user] = map[string]*string{}
			users = append(users, user)
		}
		changes[user][key] = v
	}
	current := map[string]map[string]string{}
	for _, d := range req.Deletions {
		if failed[d.Name] {
			continue
		}
		cfg, ok := current[d.Name]
		if !ok {
			var err error
			if cfg, err = UserConfigs(ctx, st, d.Name); err != nil {
				fail(d.Name, kerr.UnknownServerError.Code, err.Error())
				continue
			}
			current[d.Name] = cfg
		}
		m, _ := auth.ScramMechanismByType(d.Mechanism)
		if _, ok := cfg[m.Name]; !ok {
			fail(d.Name, kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist")
			continue
		}
		add(d.Name, m.Name, nil)
	}
	for _, u := range req.Upsertions {
		if failed[u.Name] {
			continue
		}
		m, _ := auth.ScramMechanismByType(u.Mechanism)
		c := FormatScramCredentialFromSalted(m, u.SaltedPassword, u.Salt, u.Iterations)
		add(u.Name, m.Name, &c)
	}
	sort.Strings(users)
	for _, user := range users {
		if failed[user] {
			continue
		}
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = user
		if err := AlterUserConfigs(ctx, st, user, changes[user]); err != nil {
			r.ErrorCode, r.ErrorMessage = kerr.UnknownServerError.Code, strp(err.Error())
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// FormatScramCredentialFromSalted is the stored form of the credential
// of a salted password, as AlterUserScramCredentials carries it.
func FormatScramCredentialFromSalted(m auth.ScramMechanism, salted, salt []byte, iterations int32) string {
	return auth.FormatScramCredential(m.CredentialFromSalted(salted, salt, iterations))
}
