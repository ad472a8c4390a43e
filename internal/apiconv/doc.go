// Package apiconv translates between the public API (recommender.v1 messages) and the domain
// types of package recommender, and turns a request into validated decision inputs. Its
// violations carry protojson paths ("spec.metrics[0].resource.target.averageValue"), the form
// google.rpc.BadRequest takes.
//
// It is the one translation both the server and the clients' in-process engine (hpactl
// --local, the scaler's fallback) use, so a local answer is the server's answer. It imports
// the generated API and package recommender only: never server, store or clients.
package apiconv
