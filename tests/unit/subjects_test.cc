#include "queue/subjects.h"
#include "catalog/names.h"

#include <gtest/gtest.h>

namespace shoal::queue {
namespace {

TEST(Subjects, ModelIdsBecomeOneSubjectSafeToken) {
  EXPECT_EQ(ModelToken("org/name-v1.5"), "org_2Fname-v1_2E5");
  EXPECT_EQ(ModelToken("a_b"), "a_5Fb");
  for (std::string id : {"org/name-v1.5", "a_b", "x", "BAAI/bge-small-en-v1.5", "_._/"}) {
    const std::string t = ModelToken(id);
    EXPECT_EQ(t.find_first_of(".*> /\\"), std::string::npos) << t;
    auto back = ModelIdFromToken(t);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, id);
  }
  EXPECT_FALSE(ModelIdFromToken("bad_Z").ok());
  EXPECT_FALSE(ModelIdFromToken("bad_4").ok());
}

TEST(Subjects, Names) {
  EXPECT_EQ(WorkStreamName("default"), "SHOAL_WORK_default");
  EXPECT_EQ(WorkSubject("default", "org/m.1"), "shoal.work.default.org_2Fm_2E1");
  EXPECT_EQ(WorkSubjectFilter("gpu"), "shoal.work.gpu.>");
  EXPECT_EQ(ReplySubject("gwabc", 42), "_INBOX.gwabc.42");
}

TEST(Subjects, EachPriorityClassHasItsSubjectAndConsumer) {
  EXPECT_EQ(WorkSubject("default", "org/m.1", Priority::kBatch), "shoal.work.default.org_2Fm_2E1.batch");
  EXPECT_EQ(ConsumerName("org/m.1"), "org_2Fm_2E1");
  EXPECT_EQ(ConsumerName("org/m.1", Priority::kBatch), "org_2Fm_2E1_batch");
  // Both name the model; no model's own token reads as a batch consumer.
  for (Priority p : {Priority::kInteractive, Priority::kBatch}) {
    EXPECT_EQ(*ModelIdFromConsumer(ConsumerName("org/m.1", p)), "org/m.1");
    const std::string subject = WorkSubject("default", "org/m.1", p);
    EXPECT_EQ(*ModelIdFromWorkSubjectTail(subject.substr(std::string("shoal.work.default.").size())), "org/m.1");
  }
  EXPECT_EQ(*ModelIdFromConsumer(ConsumerName("x_batch")), "x_batch");
  EXPECT_EQ(ParsePriority("batch"), Priority::kBatch);
  EXPECT_EQ(ParsePriority("interactive"), Priority::kInteractive);
  EXPECT_FALSE(ParsePriority("BATCH"));
  EXPECT_EQ(PriorityName(Priority::kBatch), "batch");
}

TEST(Subjects, AHedgedCopySaysItsModelAndWhetherItIsForIdleHands) {
  EXPECT_EQ(HedgeSubject("host.a-1", "org/m.1"), "shoal.hedge.host_2Ea-1.org_2Fm_2E1");
  EXPECT_EQ(HedgeSubject("w", "org/m.1", /*if_idle=*/true), "shoal.hedge.w.org_2Fm_2E1.idle");
  for (bool if_idle : {false, true}) {
    auto copy = ParseHedgeSubject(HedgeSubject("host.a-1", "org/m.1", if_idle));
    ASSERT_TRUE(copy.ok()) << copy.status().ToString();
    EXPECT_EQ(copy->model_id, "org/m.1");
    EXPECT_EQ(copy->if_idle, if_idle);
  }
  // A model named "idle" is the model, not the flag.
  EXPECT_EQ(ParseHedgeSubject(HedgeSubject("w", "idle"))->model_id, "idle");
  EXPECT_FALSE(ParseHedgeSubject(HedgeSubject("w", "idle"))->if_idle);
  EXPECT_FALSE(ParseHedgeSubject("shoal.hedge.w").ok());
  EXPECT_FALSE(ParseHedgeSubject("shoal.hedge.w.m.other").ok());
  EXPECT_FALSE(ParseHedgeSubject("shoal.push.w.m").ok());
}

TEST(Subjects, Validation) {
  EXPECT_TRUE(ValidateModelId("org/name-v1.5").ok());
  EXPECT_FALSE(ValidateModelId("").ok());
  EXPECT_FALSE(ValidateModelId("/abs").ok());
  EXPECT_FALSE(ValidateModelId(".hidden").ok());
  EXPECT_FALSE(ValidateModelId("has space").ok());
  EXPECT_FALSE(ValidateModelId(std::string(129, 'a')).ok());
  EXPECT_TRUE(ValidatePoolName("gpu-a100_2").ok());
  EXPECT_FALSE(ValidatePoolName("GPU").ok());
  EXPECT_FALSE(ValidatePoolName("a.b").ok());
}

}  // namespace
}  // namespace shoal::queue
